"""What pgrig keeps about an environment: its record (env.json), the run lock,
the run journal, the live-state check, repair, and safe rewriting of small files.
"""
