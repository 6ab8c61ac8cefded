"""Agents on other hosts, over OpenSSH: the ``hosts:`` of config.yaml, one multiplexed connection per host, and the
commands and reads that go through it (docs/hosts.md).

- :mod:`.config` reads and checks ``hosts:`` (standard library only: every launch reads config.yaml);
- :mod:`.ssh` builds every ssh command line (the shared connection, no forwarding) and quotes what the remote
  shell reads, and says in words why a connection failed;
- :mod:`.probe` asks a host what it has (``agentlaunch hosts``, ``hosts check``);
- :mod:`.fleet` reads each host's fleet in parallel (``fleet``, ``status``);
- :mod:`.remote` runs ``send``, ``stop``, ``restart`` and ``tmux up`` on a host.

No daemon and no protocol of agentlaunch's own: what runs on a host is ``agentlaunch`` there, over ``ssh``.
"""
