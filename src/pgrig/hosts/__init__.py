"""Other machines pgrig works on, over SSH.

registry.py   the hosts pgrig knows (`pgrig host add/list/remove/import`): how to reach each one,
              stored in the pgrig home (paths of keys, never their content)
ssh.py        the one way to run a command on a host (asyncssh: host keys verified, argv quoted,
              one-line errors), stream a long-running process, copy files
inventory.py  reading Ansible inventories (INI and YAML) into hosts

Localhost stays implicit: no command needs a host unless `--on NAME` names one.
"""
