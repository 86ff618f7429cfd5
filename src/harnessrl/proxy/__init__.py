"""The model-serving boundary: a recording proxy that harnesses believe is their model provider.

    sessions = SessionStore(capture_dir)                      # per-rollout sessions (sessions.py)
    deps = default_deps(engine, ChatFormat(tok), sessions, config=cfg.proxy, sampling=cfg.engine.sampling)
    async with ProxyServer(deps) as server:                   # uvicorn on a real port (server.py)
        info = sessions.open("rollout-1")                     # base_url <url>/r/<token>; token = API key
        ...                                                   # run the harness against info.base_url
        calls = sessions.close("rollout-1")                   # list[ModelCall], flushed to calls.jsonl

Modules: `dialects/` (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Gemini
generateContent: parse requests, format responses and stream events), `canonical` (the
dialect-independent request/completion records), `handler` (one call in named stages: parse ->
validate -> session -> prompt -> generate -> record -> format), `limits` (context overflow as the
APIs' 400, the output cap, tool_choice none / parallel tool calls / unknown tools), `body` (a request
body from the wire to a dict: size, content-encoding, content type, JSON through the one untrusted-JSON
decoder `formats.untrusted_json`), `app` (routing, auth, model lookups, errors in each API's shape,
pseudo-streaming with keep-alives, disconnects), `sessions` (per-call
JSONL journal, lost-call counter), `capture` (digests, headers, compaction tag), `deps` (the narrow
protocol slices the proxy needs), `server` (uvicorn with a header-read deadline, keep-alive and
connection caps, no signal handlers of its own), `grammar` (event-grammar checkers), `testing` (a
scripted live proxy for tests), `cli`.

Left out on purpose: real token streaming (turns are generated whole, then streamed; DESIGN calls this
pseudo-streaming), server-side conversation state (`previous_response_id`, `conversation`), hosted
tools, top log-probs, and images: the policy reads text only, so image parts become a short text
placeholder (or a 400 with `proxy.images = "reject"`).
"""
