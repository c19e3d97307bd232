"""setup.cfg holds the metadata; this file finds the packages (a new benchmark package ships with no
list to edit) and ships ``lm_eval_bias_autoload.pth`` at the top of the wheel (site-packages), as
setuptools ships ``distutils-precedence.pth``: the line that starts :mod:`_lm_eval_bias_autoload`,
our tasks for the stock ``lm_eval`` with no flag."""

import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

PTH = "lm_eval_bias_autoload.pth"


class build_py_with_pth(build_py):
    """build_py, then the .pth beside the packages in the build folder, so at the top of the wheel.
    An editable install's wheel holds none of the build folder, only what setuptools' editable_wheel
    puts in the wheel's folder, which it names install's ``install_lib``: the .pth goes there too
    (``pip install -e .``)."""

    def run(self):
        super().run()
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), PTH)
        self.copy_file(source, os.path.join(self.build_lib, PTH), preserve_mode=0)
        if getattr(self, "editable_mode", False):
            wheel_folder = self.get_finalized_command("install").install_lib
            self.copy_file(source, os.path.join(wheel_folder, PTH), preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


# tasks/ is shipped as lm_eval_bias.tasks (setup.cfg's package_dir), which no search finds.
PACKAGES = [*find_packages(include=["lm_eval_bias", "lm_eval_bias.*"]), "lm_eval_bias.tasks"]

setup(packages=PACKAGES, cmdclass={"build_py": build_py_with_pth})
