"""What made an export: goodput's version and the warehouse it read."""
from importlib.metadata import PackageNotFoundError, version


def goodput_version() -> str:
    try:
        return version("goodput")
    except PackageNotFoundError:
        return "unknown"


def made_by(db_path) -> str:
    return f"goodput {goodput_version()} from warehouse {db_path}"
