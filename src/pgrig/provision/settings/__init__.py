"""What a server is configured with: the settings catalogue and validation,
the layers and pgrig.conf, per-run settings, profiles and their formulas.
"""
