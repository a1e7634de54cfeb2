"""The command line is a thin shell: each command calls the library and prints."""

import json


def test_models_command_lists_the_registry(capsys):
    from hyperframes.cli import main

    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"]: r for r in rows}
    assert names["channel_resnet18"]["layout"] == "channel"
    assert all(r["layout"] in ("temporal", "channel", "conv3d", "keyframe") for r in rows)
