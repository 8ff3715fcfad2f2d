"""Running load: a measured run (core/) over a load engine (engines/), from this machine or from
load hosts (remote/); backups under load (backup/) and experiments written out (emit/)."""
