"""The wheel's build step that pyproject.toml cannot say: beside the `pipeline` command, a wheel
carries the framework's dbt package (site-packages/backfill_safe: dbt_project.yml, macros, audit
models, jars/), assembled by scripts/build_package.py. An editable install (scripts/bootstrap.sh)
uses the checkout itself, whose jars/ the bootstrap builds."""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))


class BuildWithDbtPackage(build_py):
    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):
            import build_package

            build_package.dbt_package(Path(self.build_lib) / "backfill_safe")


setup(cmdclass={"build_py": BuildWithDbtPackage})
