"""The official SDKs at the proxy's edges: model lookups in the shape of the API asked, methods and
actions the proxy does not serve (404 / 405 in that API's shape, never an invented model), errors in
each dialect's own shape on every path (google-genai reads code and status from them, against `/v1`
and `/v1beta`), and keep-alives that no SDK's user ever sees (a slow engine: the same chunks reach
user code as from a fast one). Live proxy on 127.0.0.1, scripted engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types

from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.testing import scripted_proxy

VERSIONS = ["v1", "v1beta"]
"""google-genai's default API version given a base URL, and the one Gemini CLI uses."""
GOOGLE_MODEL = {
    "name": "models/gemini-x",
    "baseModelId": "gemini-x",
    "version": "harnessrl",
    "displayName": "gemini-x",
    "description": "the policy being trained, served by harnessrl",
    "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
}
GOOG = {"x-goog-api-key": "k"}
ANTHROPIC_VERSION = {"anthropic-version": "2023-06-01"}


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedProxyServer]:
    s = scripted_proxy(["done"]).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def slow() -> Iterator[ThreadedProxyServer]:
    """Every turn takes 0.35 s, keep-alives every 0.1 s: at least two reach each client."""
    s = scripted_proxy(["done"], delay_s=0.35).start()
    s.server.deps.config.keepalive_s = 0.1
    yield s
    s.stop()


_ids = iter(range(10**6))


def session(server: ThreadedProxyServer) -> Any:
    return server.server.deps.sessions.open(f"edge{next(_ids)}")


def gemini(base_url: str, version: str) -> genai.Client:
    options = types.HttpOptions(
        base_url=base_url, api_version=version, retry_options=types.HttpRetryOptions(attempts=1)
    )
    return genai.Client(api_key="unused", http_options=options)


# -- model lookups and what is not served --------------------------------------------------------------


def test_model_lookups_answer_in_the_shape_of_the_api_asked(server: ThreadedProxyServer) -> None:
    base = session(server).base_url
    openai_model = {"id": "gpt-x", "object": "model", "created": 0, "owned_by": "harnessrl"}
    assert httpx.get(base + "/v1/models/gpt-x").json() == openai_model  # no client's header: OpenAI's
    assert httpx.get(base + "/v1/models").json() == {
        "object": "list",
        "data": [openai_model | {"id": "harnessrl"}],
    }
    claude = {
        "id": "claude-x",
        "type": "model",
        "display_name": "claude-x",
        "created_at": "1970-01-01T00:00:00Z",
    }
    assert httpx.get(base + "/v1/models/claude-x", headers=ANTHROPIC_VERSION).json() == claude
    listed = httpx.get(base + "/v1/models", headers={"x-api-key": "k"}).json()
    assert listed["data"] == [claude | {"id": "harnessrl", "display_name": "harnessrl"}]
    assert (listed["has_more"], listed["first_id"], listed["last_id"]) == (False, "harnessrl", "harnessrl")
    assert httpx.get(base + "/v1/models/gemini-x", headers=GOOG).json() == GOOGLE_MODEL
    assert httpx.get(base + "/v1beta/models/gemini-x").json() == GOOGLE_MODEL  # Google's path: its shape
    names = [m["name"] for m in httpx.get(base + "/v1beta/models").json()["models"]]
    assert names == ["models/harnessrl"]
    keyed = httpx.get(f"{server.url}/v1beta/models/gemini-x?key={session(server).token}")  # curl's way
    assert keyed.json() == GOOGLE_MODEL
    fine_tuned = httpx.get(base + "/v1/models/ft:gpt-4o:org::abc").json()  # OpenAI ids hold colons
    assert fine_tuned["id"] == "ft:gpt-4o:org::abc"


def _error(r: httpx.Response) -> tuple[int, Any]:
    return r.status_code, r.json()


def test_methods_and_actions_not_served_are_the_apis_404_or_405(server: ThreadedProxyServer) -> None:
    """Issue 34.1: `POST /v1/models/x:batchEmbedContents` and `DELETE /v1/models/x` answered 200 with
    an invented model (any method, any action)."""
    base = session(server).base_url
    embed = httpx.post(base + "/v1/models/x:batchEmbedContents", json={}, headers=GOOG)
    message = "no route POST /v1/models/x:batchEmbedContents"
    assert _error(embed) == (404, {"error": {"code": 404, "message": message, "status": "NOT_FOUND"}})
    beta = httpx.post(base + "/v1beta/models/x:embedContent", json={})  # Google's path, whoever asks
    assert _error(beta)[1]["error"]["status"] == "NOT_FOUND"
    gone = httpx.delete(base + "/v1/models/x")
    error = {"message": "/v1/models/x takes GET, HEAD", "type": "server_error", "param": None, "code": None}
    assert _error(gone) == (405, {"error": error}) and gone.headers["allow"] == "GET, HEAD"
    google_gone = httpx.delete(base + "/v1/models/x", headers=GOOG)
    assert _error(google_gone)[1]["error"]["code"] == 405
    options = httpx.options(base + "/v1/chat/completions")
    assert _error(options)[1]["error"]["message"] == "/v1/chat/completions takes POST"
    get_call = httpx.get(base + "/v1beta/models/x:generateContent")
    assert _error(get_call)[1]["error"]["message"] == "/v1beta/models/x:generateContent takes POST"
    nowhere = httpx.post(base + "/v1/embeddings", json={}, headers={"x-api-key": "k"})
    error = {"type": "not_found_error", "message": "no route POST /v1/embeddings"}
    assert _error(nowhere) == (404, {"type": "error", "error": error})  # an Anthropic client's shape


def test_401s_are_in_the_shape_of_the_api_whose_path_it_is(server: ThreadedProxyServer) -> None:
    """Issue 36: 401s and 404s were OpenAI's shape for every dialect."""
    url = server.url
    unknown = "unknown session token or API key"
    beta = httpx.get(url + "/v1beta/models/m")
    assert _error(beta) == (401, {"error": {"code": 401, "message": unknown, "status": "UNAUTHENTICATED"}})
    google = httpx.get(url + "/v1/models", headers=GOOG)
    assert _error(google)[1]["error"]["status"] == "UNAUTHENTICATED"
    claude = httpx.get(url + "/v1/models/m", headers={"x-api-key": "nope"})
    error = {"type": "authentication_error", "message": unknown}
    assert _error(claude) == (401, {"type": "error", "error": error})
    probe = httpx.get(url + "/r/nope/", headers=GOOG)  # the probe with a dead prefix: still the client's
    assert _error(probe)[1]["error"]["message"] == "unknown session token"


@pytest.mark.parametrize("version", VERSIONS)
def test_google_sdk_models_errors_and_unserved_actions(server: ThreadedProxyServer, version: str) -> None:
    """google-genai given a base URL: `models.get` / `list` read Google's shape; `embed_content` (not
    served) raises instead of coming back empty; 401 and 404 carry code and status."""
    client = gemini(session(server).base_url, version)
    model = client.models.get(model="gemini-x")
    assert (model.name, model.display_name, model.version) == ("models/gemini-x", "gemini-x", "harnessrl")
    assert model.supported_actions == ["generateContent", "streamGenerateContent", "countTokens"]
    assert [m.name for m in client.models.list()] == ["models/harnessrl"]
    with pytest.raises(errors.ClientError) as e:
        client.models.embed_content(model="gemini-x", contents="hi")
    assert (e.value.code, e.value.status) == (404, "NOT_FOUND")
    bad = gemini(server.url, version)  # no session token, an unknown key
    for call in (
        lambda: bad.models.get(model="m"),
        lambda: bad.models.generate_content(model="m", contents="hi"),
    ):
        with pytest.raises(errors.ClientError) as e:
            call()
        assert (e.value.code, e.value.status, e.value.message) == (
            401,
            "UNAUTHENTICATED",
            "unknown session token or API key",
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_google_sdk_sees_a_part_with_no_data_as_googles_400(
    server: ThreadedProxyServer, version: str
) -> None:
    """Issue 34.3: a part with no data (the SDK's `Part()`) was a 200; Google answers 400."""
    client = gemini(session(server).base_url, version)
    with pytest.raises(errors.ClientError) as e:
        client.models.generate_content(model="m", contents=[types.Content(role="user", parts=[types.Part()])])
    assert (e.value.code, e.value.status) == (400, "INVALID_ARGUMENT")
    assert (
        e.value.message == "contents[0].parts[0] has no data: it needs text, an image or a functionResponse"
    )


def test_openai_and_anthropic_sdks_look_models_up(server: ThreadedProxyServer) -> None:
    info = session(server)
    oai = openai.OpenAI(base_url=info.openai_base_url, api_key="unused", max_retries=0)
    model = oai.models.retrieve("gpt-x")
    assert (model.id, model.object, model.owned_by) == ("gpt-x", "model", "harnessrl")
    assert [m.id for m in oai.models.list()] == ["harnessrl"]
    with pytest.raises(openai.NotFoundError) as not_found:
        oai.embeddings.create(model="x", input="hi")
    assert not_found.value.body == {  # type: ignore[comparison-overlap]
        "message": "no route POST /v1/embeddings",
        "type": "not_found_error",
        "param": None,
        "code": None,
    }
    ant = anthropic.Anthropic(base_url=info.base_url, api_key="unused", max_retries=0)
    claude = ant.models.retrieve("claude-x")
    assert (claude.id, claude.display_name, claude.type) == ("claude-x", "claude-x", "model")
    assert [m.id for m in ant.models.list()] == ["harnessrl"]
    with pytest.raises(anthropic.NotFoundError) as gone:
        ant.messages.batches.list()  # Anthropic's path, not served
    assert gone.value.body == {  # type: ignore[comparison-overlap]
        "type": "error",
        "error": {"type": "not_found_error", "message": "no route GET /v1/messages/batches"},
    }


# -- keep-alives never reach user code -----------------------------------------------------------------


def _both(fast: ThreadedProxyServer, slow: ThreadedProxyServer, run: Callable[[Any], Any]) -> Any:
    """What user code sees from a fast turn and from a slow one (keep-alives sent): the same."""
    quick, slowed = run(session(fast)), run(session(slow))
    assert slowed == quick
    return slowed


STREAMS = [
    (
        "/v1/messages",
        {"model": "m", "max_tokens": 50, "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    ),
    ("/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/responses", {"model": "m", "stream": True, "input": "hi"}),
    ("/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [{"parts": [{"text": "hi"}]}]}),
    ("/v1/models/m:streamGenerateContent?alt=sse", {"contents": [{"parts": [{"text": "hi"}]}]}),
]


@pytest.mark.parametrize(("route", "body"), STREAMS, ids=[r for r, _ in STREAMS])
def test_a_slow_turn_does_send_keepalives(slow: ThreadedProxyServer, route: str, body: Any) -> None:
    """The premise of the SDK tests below: their streams carry at least two keep-alives."""
    raw = httpx.post(session(slow).base_url + route, json=body, timeout=30).content
    if "GenerateContent" in route:  # Google's: blank lines before the one event
        assert len(raw) - len(raw.lstrip(b"\n")) >= 2 and raw.count(b"data: ") == 1, raw[:300]
    else:
        keepalive = b"event: ping\n" if route == "/v1/messages" else b": keep-alive\n\n"
        assert raw.count(keepalive) >= 2, raw[:300]


def test_anthropic_sdk_never_sees_a_keepalive(server: ThreadedProxyServer, slow: ThreadedProxyServer) -> None:
    def run(info: Any) -> list[str]:
        client = anthropic.Anthropic(base_url=info.base_url, api_key="unused", max_retries=0)
        events = client.messages.create(
            model="m", max_tokens=50, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return [e.type for e in events]

    assert _both(server, slow, run) == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_openai_chat_sdk_never_sees_a_keepalive(
    server: ThreadedProxyServer, slow: ThreadedProxyServer
) -> None:
    def run(info: Any) -> list[Any]:
        client = openai.OpenAI(base_url=info.openai_base_url, api_key="unused", max_retries=0)
        chunks = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return [(c.object, c.choices[0].delta.content, c.choices[0].finish_reason) for c in chunks]

    assert _both(server, slow, run) == [
        ("chat.completion.chunk", "", None),
        ("chat.completion.chunk", "done", None),
        ("chat.completion.chunk", None, "stop"),
    ]


def test_openai_responses_sdk_never_sees_a_keepalive(
    server: ThreadedProxyServer, slow: ThreadedProxyServer
) -> None:
    def run(info: Any) -> list[str]:
        client = openai.OpenAI(base_url=info.openai_base_url, api_key="unused", max_retries=0)
        return [e.type for e in client.responses.create(model="m", input="hi", stream=True)]

    events = _both(server, slow, run)
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.output_text.delta" in events


@pytest.mark.parametrize("version", VERSIONS)
def test_google_sdk_never_sees_a_keepalive(
    server: ThreadedProxyServer, slow: ThreadedProxyServer, version: str
) -> None:
    """Issue 34.2: keep-alives reached the Python SDK as empty chunks (`.text` None), so the SDK's own
    idiom below raised TypeError on a slow answer."""

    def run(info: Any) -> str:
        client = gemini(info.base_url, version)  # kept: collecting the Client closes its HTTP client
        stream = client.models.generate_content_stream(model="m", contents="hi")
        return "".join(c.text for c in stream)  # type: ignore[misc]

    assert _both(server, slow, run) == "done"
