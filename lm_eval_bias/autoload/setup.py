"""pyproject.toml holds the metadata; this file reads the version, which is lm-eval-bias's own
(``lm_eval_bias.__version__`` in ``../__init__.py``, read without importing the package, as
lm-eval-bias's setup.cfg reads it), makes lm-eval-bias of that version the one dependency, and
ships the start-up files at the top of the wheel (site-packages), beside the hook module."""

import ast
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
STARTUP_FILES = ("lm_eval_bias_autoload.pth", "lm_eval_bias_autoload.start")
HOOK = "_lm_eval_bias_autoload.py"


def version() -> str:
    """lm-eval-bias's version: from the sdist's PKG-INFO when built from an sdist of this folder
    alone (written from the package's source when the sdist was made), else from the package's
    source beside this folder."""
    sdist = os.path.join(HERE, "PKG-INFO")
    if os.path.isfile(sdist):
        with open(sdist, encoding="utf-8") as file:
            return next(line.split(":", 1)[1].strip() for line in file if line.startswith("Version:"))
    package = os.path.join(HERE, os.pardir, "__init__.py")
    with open(package, encoding="utf-8") as file:
        for node in ast.parse(file.read()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
                return ast.literal_eval(node.value)
    raise RuntimeError(f"{package} sets no __version__")


class build_py_with_startup_files(build_py):
    """build_py, then the ``.pth`` and ``.start`` files beside the module in the build folder, so at
    the top of the wheel. An editable install's wheel holds none of the build folder, only what
    setuptools' editable_wheel puts in the wheel's folder, which it names install's
    ``install_lib``: the start-up files go there, and the module too, so that they never point at
    a clone that was moved or deleted (then Python 3.15's ``.start`` would print an error at every
    start)."""

    def run(self):
        super().run()
        for name in STARTUP_FILES:
            self.copy_file(os.path.join(HERE, name), os.path.join(self.build_lib, name), preserve_mode=0)
        if getattr(self, "editable_mode", False):
            wheel_folder = self.get_finalized_command("install").install_lib
            for name in (*STARTUP_FILES, HOOK):
                self.copy_file(os.path.join(HERE, name), os.path.join(wheel_folder, name), preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        return [*super().get_outputs(include_bytecode), *(os.path.join(self.build_lib, n) for n in STARTUP_FILES)]


VERSION = version()
setup(
    version=VERSION, install_requires=[f"lm-eval-bias=={VERSION}"], cmdclass={"build_py": build_py_with_startup_files}
)
