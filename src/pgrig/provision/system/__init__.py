"""The operating system under every server: the account that runs it and child programs that die
with pgrig."""
