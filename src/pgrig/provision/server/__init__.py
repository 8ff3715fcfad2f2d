"""The PostgreSQL server itself: builds, the OS user, the postmaster and other
daemons, ports, CPU affinity, remote access, replicas and backups.
"""
