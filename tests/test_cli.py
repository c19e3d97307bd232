import re
from pathlib import Path

from lm_eval_bias import cli

ROOT = Path(__file__).resolve().parents[1]


def test_cache_path_differs_between_models_and_model_args(tmp_path):
    base = str(tmp_path / "lm")
    gpt2 = cli.model_specific_cache_path(base, "hf", {"pretrained": "gpt2"})
    assert gpt2 == cli.model_specific_cache_path(base, "hf", {"pretrained": "gpt2"})
    assert gpt2 != cli.model_specific_cache_path(base, "hf", {"pretrained": "gpt2-medium"})
    assert gpt2 != cli.model_specific_cache_path(base, "hf", {"pretrained": "gpt2", "revision": "v2"})
    assert gpt2 != cli.model_specific_cache_path(base, "vllm", {"pretrained": "gpt2"})
    assert re.fullmatch(re.escape(base) + r"__gpt2__[0-9a-f]{12}", gpt2)


def test_cache_path_inside_an_existing_directory(tmp_path):
    path = cli.model_specific_cache_path(str(tmp_path), "hf", "pretrained=org/My Model,dtype=float32")
    assert Path(path).parent == tmp_path
    assert Path(path).name.startswith("My_Model__")


def test_tasks_dir_command(capsys):
    cli.main(["tasks-dir"])
    assert (Path(capsys.readouterr().out.strip()) / "winoqueer" / "winoqueer.yaml").is_file()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    test_command = re.search(r"```bash\n(?:.*\n)*?(?P<cmd>pytest[^\n]*)\n", readme).group("cmd")
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()
