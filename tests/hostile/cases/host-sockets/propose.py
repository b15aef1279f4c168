import socket

import attack

attack.ran("host-sockets")
t = attack.targets()


def unix(address):
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(address)
        s.sendall(b"hello")
        s.close()
    return connect


def tcp():
    s = socket.create_connection(("127.0.0.1", t["port"]), timeout=2)
    s.sendall(b"hello")
    s.close()


attack.attempt("host unix socket", unix(t["socket"]))
attack.attempt("abstract unix socket", unix("\0" + t["abstract"]))
attack.attempt("host loopback TCP", tcp)
attack.bump_value()
