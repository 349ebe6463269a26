"""Which packages the wheel holds, discovered from the tree (everything else is in pyproject.toml).

The three code folders sit at the top of the repository and install under one import name,
``donebell``. pyproject.toml alone cannot say that without a hand-kept list of every subpackage:
setuptools' ``find`` names what it finds by folder (``shared.statedir``), which would install a
bare ``shared`` package, and a list is what once shipped a wheel without half the program. So the
list is computed here: every package under ``shared/``, ``workers/`` and ``supervisor/``, renamed
under ``donebell.``, plus ``ops/`` as the ``donebell`` package itself (the ``python -m donebell``
launcher and the service templates, package data by the rule in pyproject.toml).
"""

from setuptools import find_packages, setup

CODE_FOLDERS = ("shared", "workers", "supervisor")

found = find_packages(include=[pattern for folder in CODE_FOLDERS for pattern in (folder, f"{folder}.*")])
setup(
    packages=["donebell", *(f"donebell.{name}" for name in found)],
    package_dir={"donebell": "ops", **{f"donebell.{folder}": folder for folder in CODE_FOLDERS}},
)
