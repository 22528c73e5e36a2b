#!/usr/bin/env python3
"""A lean OpenAI-compatible streaming mock for AgentX client-cost runs (issue 21 target 2).

Why not the oracle's `mock_server.py`: that one parses every body as JSON, hashes every message
and logs it, so at thousands of lanes with 2.6 MB bodies the mock, not the client, sets the
pace. This one holds no body: it reads the request in 1 MiB pieces and keeps only the last
256 bytes, where the replay's body ends with `"max_completion_tokens":N` (or `max_tokens`).

Per POST: waits `N x --token-ms` ms (the oracle mock's per-token pacing, one sleep), then sends
one chunked SSE answer: a role chunk, N `"tok "` content chunks, a finish chunk, a usage chunk
(prompt_tokens = body bytes / 4, as the oracle mock counts without a tokenizer) and
`data: [DONE]`. GET /v1/models, /health and /metrics answer minimally. HTTP/1.1 keep-alive.

Usage: python3 agentx_fast_mock.py --port 8871 [--model dsv4-mock] [--token-ms 1]
Prints `peak_in_flight N requests M` to stderr every 10 s and at exit.
"""

import argparse
import asyncio
import json
import re
import sys
import time

CAP = re.compile(rb'"(?:max_completion_tokens|max_tokens)":(\d+)')
STATE = {"in_flight": 0, "peak": 0, "requests": 0}


def sse(obj) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def answer(model: str, n_out: int, prompt_tokens: int) -> bytes:
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model}

    def ch(delta, finish=None):
        return sse(dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}]))

    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n_out,
             "total_tokens": prompt_tokens + n_out}
    return b"".join([
        ch({"role": "assistant", "content": ""}),
        ch({"content": "tok "}) * n_out,
        ch({}, "length"),
        sse(dict(base, choices=[], usage=usage)),
        b"data: [DONE]\n\n",
    ])


def chunked(status: str, ctype: str, payload: bytes) -> bytes:
    head = (f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\n"
            f"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n").encode()
    return head + f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n"


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, args) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for ln in lines[1:]:
                k, _, v = ln.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v.strip())
            tail = b""
            left = length
            while left > 0:
                piece = await reader.read(min(left, 1 << 20))
                if not piece:
                    return
                left -= len(piece)
                tail = (tail + piece)[-256:]
            if method == "POST":
                STATE["requests"] += 1
                STATE["in_flight"] += 1
                STATE["peak"] = max(STATE["peak"], STATE["in_flight"])
                try:
                    m = CAP.search(tail)
                    n_out = max(1, int(m.group(1))) if m else 16
                    if args.token_ms:
                        await asyncio.sleep(n_out * args.token_ms / 1000.0)
                    writer.write(chunked("200 OK", "text/event-stream",
                                         answer(args.model, n_out, length // 4)))
                    await writer.drain()
                finally:
                    STATE["in_flight"] -= 1
            elif path.startswith("/v1/models"):
                body = json.dumps({"object": "list", "data": [
                    {"id": args.model, "object": "model", "owned_by": "mock"}]}).encode()
                writer.write(chunked("200 OK", "application/json", body))
                await writer.drain()
            elif path.startswith("/metrics"):
                body = f"mock_requests_total {STATE['requests']}\n".encode()
                writer.write(chunked("200 OK", "text/plain", body))
                await writer.drain()
            else:
                writer.write(chunked("200 OK", "text/plain", b"ok"))
                await writer.drain()
    except ConnectionError:
        return
    finally:
        writer.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8871)
    ap.add_argument("--model", default="dsv4-mock")
    ap.add_argument("--token-ms", type=float, default=1.0)
    args = ap.parse_args()
    server = await asyncio.start_server(lambda r, w: handle(r, w, args), "127.0.0.1", args.port,
                                        backlog=8192, limit=1 << 16)

    async def report():
        while True:
            await asyncio.sleep(10)
            print(f"{time.strftime('%H:%M:%S')} peak_in_flight {STATE['peak']} "
                  f"requests {STATE['requests']}", file=sys.stderr, flush=True)

    asyncio.get_running_loop().create_task(report())
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop  # optional: the oracle venv has it
        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
