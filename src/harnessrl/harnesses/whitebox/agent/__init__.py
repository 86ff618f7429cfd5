"""The white-box harness program: standard library only, run inside the sandbox as `python3 -m wbagent`.

Installed by copying this folder to `<harness cache>/whitebox-<digest>/wbagent` (see `..adapter`);
its modules import each other relatively, so the same files import as
`harnessrl.harnesses.whitebox.agent` on the host (tests, mypy) and as `wbagent` in the sandbox.
One module per factor: `prompts`, `tools`, `observe`, `context`, `workflow`; `loop` holds the agent
loop around them, `client` the streaming Chat Completions client.
"""
