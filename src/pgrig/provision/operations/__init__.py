"""What each `pgrig env` command does, here or through a host's pgrig: typed functions the CLI
calls and renders (create, change, lifecycle, pooler)."""
