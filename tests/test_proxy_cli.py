"""``ctxkit proxy`` as a user runs it: a process that says where it listens, logs a line per request,
keeps keys out of everything it writes, finishes streams in flight on SIGTERM and refuses bad options."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import httpx2
from live_conversations import synthetic
from proxy_upstream import Answer, Upstream

SECRET = "sk-ant-api03-cli-SECRET-0xC0FFEE"


class ProxyProcess:
    def __init__(self, upstream: str, store, *extra: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "ctxkit.cli.main", "proxy", "--listen", "127.0.0.1:0",
                                      "--upstream", upstream, "--store", str(store), *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "NO_COLOR": "1"})
        self.stderr: list[str] = []
        first = self.proc.stderr.readline()
        self.stderr.append(first)
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
        assert found, first + self.proc.stderr.read()
        self.url = found.group(1)
        self._reader = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True)
        self._reader.start()

    def stop(self) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out = self.proc.stdout.read()
        code = self.proc.wait(30)
        self._reader.join(5)
        return code, out, "".join(self.stderr)


def test_the_proxy_logs_each_request_and_keeps_the_keys_out_of_its_log_and_store(tmp_path):
    store = tmp_path / "store"
    messages = synthetic(24, 3_000, big_every=3)
    with Upstream() as up:
        proxy = ProxyProcess(up.url, store, "--report", "json")
        with httpx2.Client(timeout=60) as client:
            for i in range(1, len(messages) + 1, 2):
                up.script.append(Answer.sse("ok", {"input_tokens": 50, "cache_read_input_tokens": 1000,
                                                   "cache_creation_input_tokens": 20, "output_tokens": 4}))
                body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True, "messages": messages[:i],
                        "metadata": {"user_id": f"user-{SECRET}"}}
                r = client.post(proxy.url + "/v1/messages?beta=true", content=json.dumps(body),
                                headers={"x-api-key": SECRET, "authorization": f"Bearer {SECRET}"})
                assert r.status_code == 200
        code, out, err = proxy.stop()
    assert code == 0, err
    assert all(q.headers["x-api-key"] == SECRET and q.headers["authorization"] == f"Bearer {SECRET}"
               for q in up.requests)
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == len(up.requests) == len(messages) // 2 + 1
    assert records[-1]["usage"] == {"input_tokens": 50, "cache_read_input_tokens": 1000,
                                    "cache_creation_input_tokens": 20, "output_tokens": 4}
    assert records[-1]["tokens_sent"] < records[-1]["tokens_in"] and records[-1]["managed"]
    assert SECRET not in out and SECRET not in err
    written = [p for p in store.rglob("*") if p.is_file()]
    assert written, "the store holds what was spared"
    assert not [p for p in written if SECRET.encode() in p.read_bytes() or SECRET in str(p)]


def test_the_text_log_says_tokens_in_and_sent_cache_and_saved(tmp_path):
    messages = synthetic(12, 3_000, big_every=2)
    with Upstream() as up:
        proxy = ProxyProcess(up.url, tmp_path / "store")
        for i in (len(messages) - 2, len(messages)):
            up.script.append(Answer.json("ok", {"input_tokens": 7, "cache_read_input_tokens": 1234,
                                                "cache_creation_input_tokens": 56, "output_tokens": 3}))
            httpx2.post(proxy.url + "/v1/messages", content=json.dumps(
                {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages[:i]}))
        code, out, err = proxy.stop()
    assert code == 0 and out == ""
    assert f"forwarding to {up.url}; store {tmp_path / 'store'}" in err
    line = [x for x in err.splitlines() if "POST /v1/messages 200" in x][-1]
    assert re.search(r"^[0-9a-f]{12} +POST /v1/messages 200  [\d,]+ → [\d,]+ tokens  cache read 1,234 write 56  "
                     r"saved \$\d+\.\d{4}$", line), line


def test_sigterm_lets_a_stream_in_flight_finish(tmp_path):
    answer = Answer.sse("a stream that takes a while to finish", pieces=8, drip=0.25)
    with Upstream() as up:
        up.script.append(answer)
        proxy = ProxyProcess(up.url, tmp_path / "store")
        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True,
                           "messages": [{"role": "user", "content": "hi"}]})
        with httpx2.stream("POST", proxy.url + "/v1/messages", content=body, timeout=30) as r:
            chunks = r.iter_raw()
            got = next(chunks)
            proxy.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            got += b"".join(chunks)
        code, out, err = proxy.stop()
    assert got == b"".join(answer.chunks)
    assert code == 0, err


def test_bad_options_are_refused_before_listening(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "proxy", *args], capture_output=True,
                              text=True, timeout=60)
    bad_url = run("--upstream", "api.anthropic.com")
    assert bad_url.returncode == 2
    assert bad_url.stderr.strip() == ("ctxkit: error: --upstream must be an http:// or https:// URL, got "
                                      "'api.anthropic.com'")
    bad_listen = run("--upstream", "http://127.0.0.1:1", "--listen", "localhost:http")
    assert bad_listen.returncode == 2
    assert "--listen must look like HOST:PORT or PORT, got 'localhost:http'" in bad_listen.stderr
    from ctxkit.proxy.server import bind
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    in_use = run("--upstream", "http://127.0.0.1:1", "--listen", f"127.0.0.1:{port}")
    taken.close()
    assert in_use.returncode == 2
    assert in_use.stderr.startswith(f"ctxkit: error: cannot listen on 127.0.0.1:{port}: ")
    bad_policy = run("--upstream", "http://127.0.0.1:1", "-p", str(tmp_path / "missing.yaml"))
    assert bad_policy.returncode == 2 and "missing.yaml" in bad_policy.stderr
    (tmp_path / "a-file").write_text("not a store")
    store_is_a_file = run("--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--store",
                          str(tmp_path / "a-file"))  # it listened, and left every request unmanaged
    assert (store_is_a_file.returncode, store_is_a_file.stderr) == (
        2, f"ctxkit: error: --store {tmp_path / 'a-file'}: not a folder (each conversation's store is a folder in it)\n")


def test_without_the_proxy_extra_installed_the_proxy_says_what_to_install(tmp_path):
    # aiohttp made unimportable, as in an install without the ``proxy`` extra
    script = ("import sys; sys.modules['aiohttp'] = None; from ctxkit.cli.main import run; "
              "sys.argv = ['ctxkit', 'proxy', '--upstream', 'http://127.0.0.1:1']; run()")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("ctxkit: error: ctxkit proxy needs aiohttp, which is not installed: "
                                   "pip install 'ctxkit[proxy]'")


def test_sigterm_right_after_the_answers_loses_no_log_line(tmp_path):
    """The log is written off the requests' path, after the answers went: a SIGTERM the moment the last
    answer arrives still leaves every request's line and every message in the store."""
    store, users = tmp_path / "store", [f"user{k}" for k in range(12)]
    messages = synthetic(30, 3_000, big_every=3)  # ~0.6 MB a conversation: writes that take a while
    with Upstream() as up:
        up.script.extend(Answer.json("ok", {"input_tokens": 7, "output_tokens": 3}) for _ in users)
        proxy = ProxyProcess(up.url, store)

        def send(user: str) -> int:
            body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "metadata": {"user_id": user},
                    "messages": [{"role": "user", "content": f"{user}: fix the failing tests."}, *messages[1:]]}
            return httpx2.post(proxy.url + "/v1/messages", json=body, timeout=60).status_code

        codes: list[int] = []
        threads = [threading.Thread(target=lambda u=u: codes.append(send(u))) for u in users]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        proxy.proc.send_signal(signal.SIGTERM)
        code, _, err = proxy.stop()
    assert code == 0 and codes == [200] * len(users), err
    logged = sorted(store.glob("proxy/*/requests.jsonl"))
    assert len(logged) == len(users)
    for requests in logged:
        [line] = requests.read_text().splitlines()
        assert json.loads(line)["messages"] == len(messages)
        assert len((requests.parent / "messages.jsonl").read_text().splitlines()) == len(messages)
