#!/usr/bin/python3
"""Holds every packet of one netfilter queue for a fixed time, then lets it through: latency without tc netem.

This machine's kernel has no sch_netem, but it has NFQUEUE. An iptables rule sends a namespace's packets to
queue N; this process receives each one's id over netlink (metadata only, never the payload) and gives the
kernel its verdict (accept) `delay` milliseconds later. Packets leave in the order they came, as on a long
wire. Python's standard library speaks netlink, so the lab needs no compiled helper.

Usage: nfqueue-delay.py QUEUE_NUMBER DELAY_MS. Prints `ready` once bound. On SIGTERM it lets every held
packet through at once and exits, so ending a latency fault drops nothing.
"""
import collections
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_ACCEPT = 1


def attribute(kind, payload):
    length = 4 + len(payload)
    return struct.pack('=HH', length, kind) + payload + b'\0' * ((4 - length % 4) % 4)


class Queue:
    def __init__(self, number):
        self.number = number
        self.sequence = 0
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        # Root may go past rmem_max: a burst must not overflow the notifications (their packets would stay held).
        self.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
        self.sock.bind((0, 0))

    def send(self, message_type, attributes, ack=False):
        self.sequence += 1
        body = struct.pack('!BBH', socket.AF_UNSPEC, 0, self.number) + b''.join(attributes)
        flags = NLM_F_REQUEST | (NLM_F_ACK if ack else 0)
        header = struct.pack('=IHHII', 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | message_type, flags, self.sequence, 0)
        self.sock.send(header + body)
        if ack:
            self.expect_ack()

    def expect_ack(self):
        data = self.sock.recv(65536)
        _, kind, _, _, _ = struct.unpack_from('=IHHII', data)
        error = struct.unpack_from('=i', data, 16)[0] if kind == NLMSG_ERROR else 0
        if error != 0:
            raise OSError(-error, 'nfqueue configuration refused')

    def bind(self):
        self.send(NFQNL_MSG_CONFIG, [attribute(NFQA_CFG_CMD, struct.pack('!BxH', NFQNL_CFG_CMD_BIND, socket.AF_INET))], ack=True)
        self.send(NFQNL_MSG_CONFIG, [attribute(NFQA_CFG_PARAMS, struct.pack('!IB', 0, NFQNL_COPY_META))], ack=True)
        self.send(NFQNL_MSG_CONFIG, [attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack('!I', 65536))], ack=True)
        # A full queue lets packets through instead of dropping them: the fault is latency, not loss.
        fail_open = struct.pack('!I', NFQA_CFG_F_FAIL_OPEN)
        self.send(NFQNL_MSG_CONFIG, [attribute(NFQA_CFG_FLAGS, fail_open), attribute(NFQA_CFG_MASK, fail_open)], ack=True)

    def accept(self, packet_id):
        self.send(NFQNL_MSG_VERDICT, [attribute(NFQA_VERDICT_HDR, struct.pack('!II', NF_ACCEPT, packet_id))])

    def packet_ids(self):
        """The ids of the packets in one read from the socket."""
        data = self.sock.recv(1 << 20)
        offset = 0
        while offset + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from('=IHHII', data, offset)
            if length < 16:
                break
            if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                cursor, end = offset + 20, offset + length
                while cursor + 4 <= end:
                    attr_length, attr_kind = struct.unpack_from('=HH', data, cursor)
                    if attr_length < 4:
                        break
                    if attr_kind & 0x3FFF == NFQA_PACKET_HDR:
                        yield struct.unpack_from('!I', data, cursor + 4)[0]
                    cursor += (attr_length + 3) & ~3
            offset += (length + 3) & ~3


def main():
    queue = Queue(int(sys.argv[1]))
    delay = int(sys.argv[2]) / 1000.0
    held = collections.deque()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    queue.bind()
    print('ready', flush=True)
    while not stopping:
        now = time.monotonic()
        while held and held[0][0] <= now:
            queue.accept(held.popleft()[1])
        timeout = max(0.0, held[0][0] - now) if held else 0.5
        try:
            readable, _, _ = select.select([queue.sock], [], [], timeout)
        except InterruptedError:
            continue
        if readable:
            try:
                arrived = time.monotonic()
                for packet_id in queue.packet_ids():
                    held.append((arrived + delay, packet_id))
            except OSError:
                pass  # ENOBUFS: the kernel dropped notifications; their packets pass when fail-open applies
    while held:
        queue.accept(held.popleft()[1])


if __name__ == '__main__':
    main()
