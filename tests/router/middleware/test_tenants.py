"""Issue #17, tenants at the proxy: the installed `toolsift serve openai --tenants` in a subprocess,
the real openai and anthropic clients, the scripted upstream, and the real Gorilla catalog split
between two tenants ("vision": torchhub + tensorflowhub; "nlp": huggingface, 895 tools).

Each test tries to reach the other tenant's tools: by words that only its tools match, by name,
by tool_choice, by a forged namespace header, with the catalog injected, through a repair turn,
and checks that none of its names reaches the upstream, a header, a body or the log.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from router.errors import RouterError
from router.tenancy.tenants import Tenants, hash_key
from tests.router.middleware.test_proxy_hardening import free_port, wait_health
from tests.support.scripted_apis import message
from tests.support.scripted_upstream import ScriptedUpstream, completion, tool_call

_SCRIPT = Path(sys.executable).parent / "toolsift"
VISION_KEY, NLP_KEY = "tsk_vision-team-key-0123456789", "tsk_nlp-team-key-9876543210"
CLIENT_KEY = "sk-client-upstream-key-abc"   # the client's own upstream key: passes through, never stored
UPSTREAM_KEY = "sk-platform-upstream-key"   # what the platform sends upstream when the bearer is the tenant key
SUMMARIZE = "Summarize this long news article about the elections into three sentences."


def write_tenants(path: Path) -> Path:
    path.write_text(f"""
[tenants.vision]
key_sha256 = "{hash_key(VISION_KEY)}"
namespaces = ["torchhub", "tensorflowhub"]

[tenants.nlp]
key_sha256 = ["{hash_key(NLP_KEY)}"]
namespaces = ["huggingface"]
""", encoding="utf-8")
    return path


class Proxy:
    def __init__(self, proc: subprocess.Popen, url: str, upstream: ScriptedUpstream, names: dict[str, set[str]]):
        self.proc, self.url, self.up, self.names = proc, url, upstream, names
        self.log = ""

    def openai(self, key: str | None = VISION_KEY, **headers: str) -> openai.OpenAI:
        """The real openai client, its toolsift key in ``default_headers`` (as a user sets it)."""
        headers = {k.replace("_", "-"): v for k, v in headers.items()}
        if key:
            headers["x-toolsift-key"] = key
        return openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{self.url}/v1", max_retries=0, default_headers=headers)

    def leaked(self, text: str, tenant: str = "nlp") -> list[str]:
        """Names only ``tenant``'s tools have (as a model sees them), found in ``text``."""
        return sorted(n for n in self.names[tenant] if json.dumps(n) in text)

    def sent(self, api: str = "chat") -> tuple[dict, str]:
        """The last request the upstream got (JSON) and its text."""
        body = self.up.api_requests(api)[-1]
        return body, json.dumps(body)


def routed(body: dict) -> list[dict]:
    """The catalog tools a request carried (toolsift's search tool aside: on by default)."""
    return [t for t in body.get("tools") or [] if (t.get("function") or t).get("name") != "toolsift_search_tools"]


def seen_by(raw) -> set[str]:
    """The namespaces of the catalog tools an answer's x-toolsift-selected names."""
    return {s["id"].split("/")[0] for s in json.loads(raw.headers["x-toolsift-selected"]) if "id" in s}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    from tests.conftest import build_gorilla_catalog

    tmp = tmp_path_factory.mktemp("tenants")
    db = tmp / "catalog.db"
    records = build_gorilla_catalog(db)
    vision = {r.openai_name() for r in records if r.namespace != "huggingface"}
    nlp = {r.openai_name() for r in records if r.namespace == "huggingface"}
    names = {"vision": vision - nlp, "nlp": nlp - vision}  # each tenant's own names (a few are in both)
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOOLSIFT_UPSTREAM_API_KEY": UPSTREAM_KEY}
    env.pop("TOOLSIFT_DB", None)
    with ScriptedUpstream(repeat_last=True) as up:
        proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", up.base_url, "--db", str(db),
                                 "--tenants", str(write_tenants(tmp / "tenants.toml")), "--inject-catalog",
                                 "--method", "bm25", "-k", "4", "--port", str(port), "--on-hallucination", "repair"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        p = Proxy(proc, f"http://127.0.0.1:{port}", up, names)
        try:
            wait_health(p.url, proc)
            yield p
        finally:
            proc.terminate()
            _, p.log = proc.communicate(timeout=30)
    # after every test of the module: no key ever reached the log
    assert VISION_KEY not in p.log and NLP_KEY not in p.log and CLIENT_KEY not in p.log


@pytest.fixture
def up(proxy):
    proxy.up.clear()
    proxy.up.set_script([completion("ok")])
    return proxy.up


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_injected_catalog_tools_come_only_from_the_tenants_namespaces(proxy, up):
    # BM25 over the whole catalog puts summarization models of huggingface first for these words
    raw = proxy.openai().chat.completions.with_raw_response.create(model="m", messages=user(SUMMARIZE))
    body, text = proxy.sent()
    assert len(routed(body)) == 4 and raw.headers["x-toolsift-route"].startswith("injected")
    assert seen_by(raw) <= {"torchhub", "tensorflowhub"}
    assert not proxy.leaked(text) and not proxy.leaked(json.dumps(dict(raw.headers)) + raw.text)
    # the other tenant, same words: its own summarizers
    raw = proxy.openai(NLP_KEY).chat.completions.with_raw_response.create(model="m", messages=user(SUMMARIZE))
    assert seen_by(raw) == {"huggingface"} and proxy.leaked(proxy.sent()[1])  # the words do match nlp's tools
    assert not proxy.leaked(proxy.sent()[1], "vision")
    # the client's own key went upstream untouched, the toolsift key did not
    assert up.requests[-1].headers["authorization"] == f"Bearer {CLIENT_KEY}"
    assert "x-toolsift-key" not in up.requests[-1].headers


def test_catalog_search_finds_only_the_tenants_tools(proxy, up):
    """The model's tool search over the catalog (issue 37) looks through the tenant's view only."""
    from tests.support.scripted_apis import searching_model

    wanted = sorted(proxy.names["nlp"])[0]  # another tenant's tool: never found, however asked
    up.set_script(searching_model(wanted, {}, "text classification model", "never"))
    raw = proxy.openai().chat.completions.with_raw_response.create(model="m", messages=user(SUMMARIZE))
    searched = [s for s in json.loads(raw.headers["x-toolsift-selected"]) if s["reason"] == "searched"]
    assert searched and {s["id"].split("/")[0] for s in searched} <= {"torchhub", "tensorflowhub"}
    assert "search=2" in raw.headers["x-toolsift-route"] and "cannot" in raw.parse().choices[0].message.content
    assert not any(proxy.leaked(json.dumps(body)) for body in up.chat_requests)


def test_wrong_or_missing_key_is_401_in_each_apis_error_shape(proxy, up):
    for key in (None, "tsk_not-a-tenant-key-000000", NLP_KEY[:-1]):
        with pytest.raises(openai.AuthenticationError) as err:
            proxy.openai(key).chat.completions.create(model="m", messages=user(SUMMARIZE))
        assert err.value.status_code == 401 and err.value.body["code"] == "invalid_api_key"
    claude = anthropic.Anthropic(api_key="sk-ant-client", base_url=proxy.url, max_retries=0,
                                 default_headers={"x-toolsift-key": "wrong-key-000000000"})
    with pytest.raises(anthropic.AuthenticationError) as err:
        claude.messages.create(model="claude-x", max_tokens=10, messages=user(SUMMARIZE))
    assert err.value.body["type"] == "error" and err.value.body["error"]["type"] == "invalid_api_key"
    # every other path needs the key too; /healthz says only the status without it
    assert httpx.get(f"{proxy.url}/v1/models").status_code == 401
    assert httpx.get(f"{proxy.url}/metrics").status_code == 401
    assert httpx.get(f"{proxy.url}/healthz").json() == {"status": "ok"}
    assert "upstream" in httpx.get(f"{proxy.url}/healthz", headers={"x-toolsift-key": NLP_KEY}).json()
    assert not up.requests  # nothing reached the upstream


def test_bearer_key_as_tenant_key_is_replaced_upstream(proxy, up):
    """A client that can set only an API key: the bearer is the tenant key, never sent upstream."""
    c = openai.OpenAI(api_key=NLP_KEY, base_url=f"{proxy.url}/v1", max_retries=0)
    raw = c.chat.completions.with_raw_response.create(model="m", messages=user(SUMMARIZE))
    assert seen_by(raw) == {"huggingface"}
    assert up.requests[-1].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    claude = anthropic.Anthropic(api_key=VISION_KEY, base_url=proxy.url, max_retries=0)
    up.set_script([message("ok")])
    raw = claude.messages.with_raw_response.create(model="claude-x", max_tokens=10, messages=user(SUMMARIZE))
    body, text = proxy.sent("messages")
    assert len(routed(body)) == 4 and seen_by(raw) <= {"torchhub", "tensorflowhub"} and not proxy.leaked(text)
    sent_headers = up.requests[-1].headers  # this anthropic SDK sends its key as a bearer token
    assert UPSTREAM_KEY in (sent_headers.get("x-api-key"), sent_headers.get("authorization", "")[7:])
    assert VISION_KEY not in json.dumps([r.headers for r in up.requests])


def test_tool_choice_naming_another_tenants_tool_does_not_offer_it(proxy, up):
    other = sorted(proxy.names["nlp"])[0]
    raw = proxy.openai().chat.completions.with_raw_response.create(
        model="m", messages=user(SUMMARIZE), tool_choice={"type": "function", "function": {"name": other}})
    offered = {t["function"]["name"] for t in up.chat_requests[-1]["tools"]}
    assert other not in offered and seen_by(raw) <= {"torchhub", "tensorflowhub"}
    assert other not in raw.headers["x-toolsift-selected"]
    # with the vision tenant's own tools brought along: tool_choice keeps only what the request brought
    mine = [{"type": "function", "function": {"name": n, "description": "a tool", "parameters": {"type": "object"}}}
            for n in sorted(proxy.names["vision"])[:6]]
    proxy.openai().chat.completions.create(model="m", messages=user(SUMMARIZE), tools=mine,
                                           tool_choice={"type": "function", "function": {"name": other}})
    sent = {t["function"]["name"] for t in up.chat_requests[-1]["tools"]} - {"toolsift_search_tools"}  # toolsift's own
    assert sent <= {t["function"]["name"] for t in mine}


def test_forged_namespace_header_is_refused_and_narrowing_works(proxy, up):
    for forged in ("huggingface", "torchhub,huggingface", "no-such-namespace"):
        with pytest.raises(openai.PermissionDeniedError) as err:
            proxy.openai(x_toolsift_namespaces=forged) \
                .chat.completions.create(model="m", messages=user(SUMMARIZE))
        assert "is not one this key may use" in err.value.message
    # an existing and a missing namespace are refused in the same words: no way to learn which exists
    assert not up.requests
    # a header that names a tenant is no header toolsift reads: the key decides
    raw = proxy.openai(x_toolsift_tenant="nlp") \
        .chat.completions.with_raw_response.create(model="m", messages=user(SUMMARIZE))
    assert seen_by(raw) <= {"torchhub", "tensorflowhub"} and not proxy.leaked(proxy.sent()[1])
    # narrowing inside the key's own namespaces
    raw = proxy.openai(x_toolsift_namespaces="tensorflowhub") \
        .chat.completions.with_raw_response.create(model="m", messages=user("detect objects in an image"))
    assert seen_by(raw) == {"tensorflowhub"}
    assert "x-toolsift-namespaces" not in up.requests[-1].headers


def test_a_call_to_another_tenants_tool_is_refused_and_never_offered_back(proxy, up):
    """The model names the other tenant's tool: hallucinated for this tenant; the repair turn offers
    this tenant's tools only, and the nearest-tool suggestions name none of the other's."""
    other = sorted(n for n in proxy.names["nlp"] if "summar" in n)[0]
    bad = completion(tool_calls=[tool_call(other, {"text": "x"})])
    up.set_script([bad, bad, bad])
    raw = proxy.openai().chat.completions.with_raw_response.create(model="m", messages=user(SUMMARIZE))
    verdicts = json.loads(raw.headers["x-toolsift-verdicts"])
    assert verdicts[0]["verdict"] == "hallucinated_tool" and raw.headers["x-toolsift-repairs"] == "2"
    for sent in up.chat_requests:
        assert not proxy.leaked(json.dumps(sent["tools"]))
    repair_text = json.dumps(up.chat_requests[1]["messages"][-1])
    assert not [n for n in proxy.leaked(repair_text) if n != other]
    assert not [n for n in proxy.leaked(json.dumps(verdicts)) if n != other]


# ---------------------------------------------------------------- the tenants file


@pytest.mark.parametrize("text, message", [
    ("[tenants.a]\nnamespaces = ['x']\n", "tenant 'a': field 'key_sha256' is missing"),
    ("[tenants.a]\nkey_sha256 = 'abc'\nnamespaces = ['x']\n", "tenant 'a': field 'key_sha256' must be a sha256"),
    ("[tenants.a]\nkey_sha256 = ['" + "0" * 64 + "', 'x']\nnamespaces = ['x']\n", "field 'key_sha256[1]'"),
    ("[tenants.a]\nkey_sha256 = '" + "0" * 64 + "'\nnamespaces = []\n", "tenant 'a': field 'namespaces' must be"),
    ("[tenants.a]\nkey_sha256 = '" + "0" * 64 + "'\nnamespaces = ['x', 3]\n", "field 'namespaces[1]'"),
    ("[tenants.a]\nkey_sha256 = '" + "0" * 64 + "'\nnamespaces = ['*', 'x']\n", "list it alone"),
    ("[tenants.a]\nkey_sha256 = '" + "0" * 64 + "'\nnamespaces = ['x']\nkeys = 1\n", "unknown field 'keys'"),
    ("[tenants.a]\nkey_sha256 = '" + "0" * 64 + "'\nnamespaces = ['x']\n"
     "[tenants.b]\nkey_sha256 = '" + "0" * 64 + "'\nnamespaces = ['y']\n", "also tenant 'a''s"),
    ("[tenant.a]\n", "unknown table or key 'tenant'"),
    ("", "no tenants"),
    ("[tenants\n", "not a TOML file"),
])
def test_bad_tenants_file_is_one_line_naming_file_tenant_and_field(tmp_path, text, message):
    path = tmp_path / "tenants.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RouterError) as err:
        Tenants.load(path)
    assert message in str(err.value) and str(err.value).startswith(f"{path}: ")


def test_bad_tenants_file_stops_serve_before_the_port_is_taken(tmp_path):
    bad = tmp_path / "tenants.toml"
    bad.write_text("[tenants.team-a]\nkey_sha256 = 'not-a-digest'\nnamespaces = ['x']\n", encoding="utf-8")
    for command in (["serve", "openai", "--upstream", "http://127.0.0.1:9/v1"], ["serve", "anthropic"]):
        r = subprocess.run([str(_SCRIPT), *command, "--tenants", str(bad), "--port", str(free_port())],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and f"{bad}: tenant 'team-a': field 'key_sha256'" in lines[0]
    r = subprocess.run([str(_SCRIPT), "serve", "openai", "--upstream", "http://127.0.0.1:9/v1", "--tenants",
                        str(write_tenants(tmp_path / "ok.toml")), "--api-key", "k" * 20], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "cannot be combined" in r.stderr


def test_keys_are_compared_by_digest_and_only_the_digest_is_stored(tmp_path):
    tenants = Tenants.load(write_tenants(tmp_path / "t.toml"))
    assert tenants.identify(VISION_KEY).name == "vision" and tenants.identify(NLP_KEY).name == "nlp"
    assert tenants.identify(VISION_KEY + " ") is None and tenants.identify("") is None
    assert tenants.identify(None) is None
    assert VISION_KEY not in (tmp_path / "t.toml").read_text()


def test_hash_key_and_new_key_commands(tmp_path):
    r = subprocess.run([str(_SCRIPT), "tenants", "hash-key"], input=VISION_KEY + "\n", capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout) == {"key_sha256": hash_key(VISION_KEY)}
    short = subprocess.run([str(_SCRIPT), "tenants", "hash-key"], input="short", capture_output=True, text=True)
    assert short.returncode == 2 and "at least 16" in short.stderr
    made = json.loads(subprocess.run([str(_SCRIPT), "tenants", "new-key"], capture_output=True, text=True).stdout)
    assert made["key"].startswith("tsk_") and made["key_sha256"] == hash_key(made["key"])
    path = tmp_path / "t.toml"
    path.write_text(f'[tenants.x]\nkey_sha256 = "{made["key_sha256"]}"\nnamespaces = ["torchhub", "nope"]\n')
    from tests.conftest import BUNDLED_GORILLA

    db = tmp_path / "c.db"
    subprocess.run([str(_SCRIPT), "catalog", "add", str(BUNDLED_GORILLA / "torchhub_api.jsonl"), "--db", str(db)],
                   check=True, capture_output=True)
    checked = json.loads(subprocess.run([str(_SCRIPT), "tenants", "check", str(path), "--db", str(db)],
                                        capture_output=True, text=True).stdout)
    assert checked["tenants"] == [{"tenant": "x", "namespaces": ["nope", "torchhub"], "tools": 94,
                                   "not_in_catalog": ["nope"]}]
