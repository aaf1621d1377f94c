"""asyncio_idle (control): an idle asyncio event loop.

A TCP server on 127.0.0.1 (an ephemeral port) waits for connections that
do not come, and one task sleeps for an hour; the loop sleeps in
epoll_wait. Nothing is wrong, and hangdoc must not claim a deadlock.

Run with /usr/bin/python3. Prints "port=<port>" and then "ready" from a
callback once the loop runs (the test waits for the epoll_wait).

main's native stack (innermost first): epoll_wait <- select_epoll_poll_impl
<- ... _PyEval_EvalFrameDefault (BaseEventLoop._run_once, run_forever).
"""

import asyncio
import sys


async def handle(reader, writer):
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"port={port}\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    loop.call_soon(lambda: (sys.stdout.write("ready\n"), sys.stdout.flush()))
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main())
