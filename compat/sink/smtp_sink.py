"""A minimal SMTP sink for the SDK compatibility suite (standard library only).

It accepts every message on a loopback port and writes each one to DIR as
<n>.eml (the message as received, dot-unstuffed) with <n>.json beside it
(the envelope: mail_from, rcpt_to), the JSON last so that a reader that finds
it finds the message whole. scripts/compat starts it for the delivering herald
whose mail the React email tests read back.

Usage: python3 smtp_sink.py DIR PORT_FILE
"""

import asyncio
import json
import os
import sys

LINE_MAX = 1024 * 1024
MESSAGE_MAX = 64 * 1024 * 1024


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0

    def store(self, mail_from, rcpt_to, data):
        self.count += 1
        base = os.path.join(self.directory, str(self.count))
        with open(base + ".eml.tmp", "wb") as f:
            f.write(data)
        os.rename(base + ".eml.tmp", base + ".eml")
        with open(base + ".json.tmp", "w") as f:
            json.dump({"mail_from": mail_from, "rcpt_to": rcpt_to}, f)
        os.rename(base + ".json.tmp", base + ".json")

    async def session(self, reader, writer):
        async def reply(line):
            writer.write(line.encode() + b"\r\n")
            await writer.drain()

        await reply("220 sink ESMTP")
        mail_from, rcpt_to = None, []
        try:
            while True:
                line = await reader.readuntil(b"\n")
                if len(line) > LINE_MAX:
                    await reply("500 5.5.2 line too long")
                    break
                command = line.decode("utf-8", "replace").strip()
                verb = command[:4].upper()
                if verb in ("EHLO", "HELO"):
                    await reply("250-sink\r\n250-8BITMIME\r\n250 SMTPUTF8")
                elif verb == "MAIL":
                    mail_from = command.split(":", 1)[1].strip().split(" ")[0].strip("<>")
                    rcpt_to = []
                    await reply("250 2.1.0 OK")
                elif verb == "RCPT":
                    rcpt_to.append(command.split(":", 1)[1].strip().split(" ")[0].strip("<>"))
                    await reply("250 2.1.5 OK")
                elif verb == "DATA":
                    await reply("354 go on")
                    data = bytearray()
                    while True:
                        chunk = await reader.readuntil(b"\n")
                        if chunk in (b".\r\n", b".\n"):
                            break
                        if chunk.startswith(b".."):
                            chunk = chunk[1:]
                        data += chunk
                        if len(data) > MESSAGE_MAX:
                            await reply("552 5.3.4 too big")
                            return
                    self.store(mail_from, rcpt_to, bytes(data))
                    mail_from, rcpt_to = None, []
                    await reply("250 2.0.0 stored")
                elif verb == "RSET":
                    mail_from, rcpt_to = None, []
                    await reply("250 2.0.0 OK")
                elif verb == "NOOP":
                    await reply("250 2.0.0 OK")
                elif verb == "QUIT":
                    await reply("221 2.0.0 bye")
                    break
                else:
                    await reply("502 5.5.1 not implemented")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


async def main():
    directory, port_file = sys.argv[1], sys.argv[2]
    os.makedirs(directory, exist_ok=True)
    sink = Sink(directory)
    server = await asyncio.start_server(sink.session, "127.0.0.1", 0, limit=LINE_MAX + 2)
    port = server.sockets[0].getsockname()[1]
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(port_file + ".tmp", port_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
