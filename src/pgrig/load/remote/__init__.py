"""Load from other hosts: the load agent and its transports (local, SSH), the split of a run
between load hosts, their samplers and the network's facts."""
