"""goodput.yaml's price per GPU-hour (analysis/ingest/options.py): read and checked like every option, one clear
line for a bad value; the report's money figures are tested in tests/test_report.py."""
from __future__ import annotations

import pytest

from analysis.ingest.options import OptionsError, load_options


def _options(tmp_path, text: str):
    (tmp_path / "goodput.yaml").write_text(text)
    return load_options(tmp_path)


def test_a_price_is_read_with_its_partitions(tmp_path):
    opts = _options(tmp_path, "price: {per_gpu_hour: 2.5, currency: eur, partitions: {gpu-h100: 3}}\n")
    assert opts.price == {"per_gpu_hour": 2.5, "currency": "EUR", "partitions": {"gpu-h100": 3.0}}
    (tmp_path / "unpriced").mkdir()
    assert load_options(tmp_path / "unpriced").price is None  # no goodput.yaml: GPU-hours only


@pytest.mark.parametrize("text, said", [
    ("price: 2.5\n", "price must map per_gpu_hour"),
    ("price: {per_gpu_hour: -1}\n", "per_gpu_hour must be a number of 0 or more"),
    ("price: {per_gpu_hour: 2, currency: dollars}\n", "currency must be a 3-letter code"),
    ("price: {per_gpu_hour: 2, partitions: {gpu: cheap}}\n", "partitions.gpu must be a number"),
    ("price: {per_gpu_hour: 2, tax: 0.2}\n", "unknown key(s) tax"),
])
def test_a_bad_price_is_one_line_naming_it(tmp_path, text, said):
    with pytest.raises(OptionsError) as exc:
        _options(tmp_path, text)
    assert said in str(exc.value) and "goodput.yaml" in str(exc.value) and "\n" not in str(exc.value)
