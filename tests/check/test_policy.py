"""Policy errors exit 2 and name the file and line; the TOML line locator; annotation escaping."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.check.locate import KeyLines
from routescope.errors import ExitCode
from routescope.render.check_annotations import command, escape_data, escape_property
from tests.check.conftest import GLM5, policy_text, run, write_policy


def test_unknown_key_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = policy_text([GLM5], "sglang==0.5.12", ["sm120"]) + "gpu_count = 8\n"
    path = write_policy(tmp_path, text)
    code, _, err = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR
    line = text.splitlines().index("gpu_count = 8") + 1
    assert f"{path}:{line}: unknown key 'gpu_count'" in err


def test_unknown_rule_in_pyproject_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        '[project]\nname = "x"\n\n[tool.routescope]\n'
        f'models = ["{GLM5}"]\nframework = "sglang==0.5.12"\ngpus = ["sm120"]\n\n'
        "[tool.routescope.rules]\nrequire_oea_insertable = true\nforbid_sink_kind = []\n"
    )
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    code, _, err = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR
    assert f"{path}:11: unknown rule 'forbid_sink_kind'" in err


def test_malformed_toml_exits_2_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_policy(tmp_path, 'framework = "sglang==0.5.12"\ngpus = ["sm120"\ntp = 8\n')
    code, out, err = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert f"{path}:" in err and "not valid TOML" in err


def test_unknown_gpu_exits_2_and_is_annotated_on_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.12", ["sm120", "sm999"]))
    code, out, err = run(["check", "--policy", str(path), "--annotations"], capsys)
    assert code == ExitCode.ERROR
    assert f"{path}:5: gpu 'sm999': unknown GPU" in err
    assert out.startswith("::error file=") and ",line=5,title=routescope%3A bad policy::" in out


@pytest.mark.parametrize(
    ("models", "why"),
    [
        pytest.param(["zai-org/GLM-5"], "must be pinned", id="hub id without a revision"),
        pytest.param(["zai-org/GLM-5@main"], "must be pinned", id="hub id on a branch"),
        pytest.param(["missing/config.json"], "no such file", id="missing config file"),
    ],
)
def test_models_must_exist_or_be_pinned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[str], why: str
) -> None:
    path = write_policy(tmp_path, policy_text(models, "sglang==0.5.12", ["sm120"]))
    code, _, err = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR and f"{path}:2: " in err and why in err


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        pytest.param(
            'forbid_sink_kinds = ["torch_compiled"]\n', "unknown sink kind", id="typo kind"
        ),
        pytest.param("require_oea_insertable = 1\n", "must be true or false", id="not a bool"),
    ],
)
def test_rule_values_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rules: str, why: str
) -> None:
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.12", ["sm120"], rules))
    code, _, err = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR and f"{path}:9: " in err and why in err


_TABLES = [  # (policy text after the 6 lines, the error, its line, id)
    ("[packages]\ntriton_kernels = 1\n", "packages.triton_kernels must be true or false", 9,
     "package not a bool"),
    ("[env]\nSGLANG_X = 1\n", "env.SGLANG_X must be a string", 9, "env not a string"),
    ('[set]\nmoe_runner_backend = ["triton"]\n',
     "set.moe_runner_backend must be a string, number or boolean", 9, "set value a list"),
    ('set = "moe_runner_backend=triton"\n', "set must be a table", 7, "set not a table"),
    ("ep = 0\n", "ep must be a positive integer", 8, "ep not positive"),
    ("ep = true\n", "ep must be a positive integer", 8, "ep a boolean"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("table", "why", "line"), [t[:3] for t in _TABLES], ids=[t[3] for t in _TABLES]
)
def test_deployment_tables_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, why: str, line: int
) -> None:
    text = policy_text([GLM5], "sglang==0.5.12", ["sm120"])  # 6 lines
    path = write_policy(
        tmp_path, text + table if table.startswith("set =") else text + "\n" + table
    )
    code, _, err = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR and why in err, err
    assert f"{path}:{line}: " in err, err


def test_deployment_tables_reach_the_policy(tmp_path: Path) -> None:
    from routescope.check.policy import load_policy

    text = policy_text([GLM5], "sglang==0.5.23", ["sm120"]) + (
        'ep = 8\n\n[set]\nmoe_runner_backend = "triton"\ndisable_shared_experts_fusion = true\n'
        '\n[env]\nSGLANG_X = "1"\n\n[packages]\ntriton_kernels = false\n'
    )
    policy = load_policy(write_policy(tmp_path, text))
    assert policy.server_args == (("disable_shared_experts_fusion", True),
                                  ("moe_runner_backend", "triton"))  # fmt: skip
    assert policy.env == (("SGLANG_X", "1"),)
    assert policy.packages == (("triton_kernels", False),)
    assert (policy.tp, policy.ep) == (8, 8)
    plain = policy_text([GLM5], "sglang==0.5.23", ["sm90"])
    assert load_policy(write_policy(tmp_path, plain)).ep is None


def test_missing_policy_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["check"], capsys)
    assert code == ExitCode.ERROR and "no routescope.toml" in err


def test_key_lines_skip_array_items_and_follow_tables() -> None:
    text = (
        "# c\n[tool.routescope]\nmodels = [\n"
        '  "a=b",  # not a key\n  "x",\n]\n[tool.routescope.rules]\n'
        "require_selected_path = true\n"
    )
    where = KeyLines(text)
    assert where.line("tool", "routescope") == 2
    assert where.line("tool", "routescope", "models") == 3
    assert where.value_line(("tool", "routescope", "models"), "x") == 5
    assert where.line("tool", "routescope", "rules", "require_selected_path") == 8


def test_annotation_escaping_follows_the_workflow_command_syntax() -> None:
    assert escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = command("error", "dir/routescope.toml", 3, "t: x, y", "m: 1\n2")
    assert line == "::error file=dir/routescope.toml,line=3,title=t%3A x%2C y::m: 1%0A2"


def test_a_lock_from_an_older_routescope_asks_to_be_recorded_again(tmp_path: Path) -> None:
    from routescope.check.lock import read_lock
    from routescope.errors import RoutescopeError

    lock = tmp_path / "routescope.lock"
    lock.write_text('lock_version = 1\nframework = "sglang==0.5.23"\n', encoding="utf-8")
    with pytest.raises(RoutescopeError, match="older routescope; record it again"):
        read_lock(lock)
    lock.write_text('lock_version = 99\nframework = "sglang==0.5.23"\n', encoding="utf-8")
    with pytest.raises(RoutescopeError, match="not a routescope lock file"):
        read_lock(lock)


def test_the_deployment_label_names_the_ep_size(tmp_path: Path) -> None:
    from routescope.check.policy import load_policy
    from routescope.render.check_common import deployment_label

    text = policy_text([GLM5], "sglang==0.5.23", ["sm120"]) + 'ep = 8\n\n[set]\nx = "y"\n'
    label = deployment_label(load_policy(write_policy(tmp_path, text)))
    assert label == "sglang==0.5.23, tp=8, ep=8, set x=y"
