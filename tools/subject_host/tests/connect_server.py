"""A --connect server for connect_test.sh: listens at a socket and, for each connection,
forks a child that receives the shared region's memfd, answers, and then becomes
protocol_subject (exec) with the two descriptors, as an --exec subject would be started.

connect_server.py SOCKET PROTOCOL_SUBJECT MODE [--serve-in-listener]
"""

import os
import socket
import sys


def serve_child(connection: socket.socket, subject: str, mode: str) -> None:
    _, fds, _, _ = socket.recv_fds(connection, 1, 1)
    connection.sendall(b"\0")
    control = connection.detach()
    os.set_inheritable(control, True)
    os.set_inheritable(fds[0], True)
    os.environ["SAMPLECHECK_CONTROL_FD"] = str(control)
    os.environ["SAMPLECHECK_SHM_FD"] = str(fds[0])
    os.execv(subject, [subject, mode])


def main() -> None:
    path, subject, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    in_listener = "--serve-in-listener" in sys.argv[4:]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    while True:
        connection, _ = listener.accept()
        if in_listener:
            # Wrong on purpose: samplecheck must refuse a server that is the listener.
            socket.recv_fds(connection, 1, 1)
            connection.sendall(b"\0")
            continue
        if os.fork() == 0:
            listener.close()
            serve_child(connection, subject, mode)
        connection.close()
        while True:  # reap the children that ended
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


if __name__ == "__main__":
    main()
