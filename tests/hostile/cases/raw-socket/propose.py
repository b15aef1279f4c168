import socket

import attack

attack.ran("raw-socket")
attack.attempt("raw IP socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                                      socket.IPPROTO_ICMP).close())
attack.attempt("packet socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close())
attack.bump_value()
