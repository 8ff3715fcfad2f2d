"""Starting a server (provision/server/postmaster.py): a port held by another process is named."""

from __future__ import annotations


def test_a_start_on_a_port_held_by_another_process_names_the_port() -> None:
    import socket

    from pgrig.provision.server.postmaster import StartError
    from pgrig.provision.state.environment import Environment

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = Environment(name="e", port=port)
        e = StartError(env, "FATAL: could not create any TCP/IP sockets")
    assert f"port {port} on 127.0.0.1 is held by another process" in str(e)
    free = StartError(
        Environment(name="e", port=port), "FATAL: could not create any TCP/IP sockets"
    )
    assert "held by another process" not in str(free)  # released: no such claim
