"""`make test-cpu`'s summary (tests.cpu_times): CPU seconds per module, and per worker its CPU, busy time and
when its last test ended, from the records conftest writes (nodeid, CPU s, worker, start, end)."""
from tests.cpu_times import per_module, per_worker

LINES = ["tests/test_a.py::test_one\t2.00\tgw0\t100.00\t103.00\n",
         "tests/test_a.py::test_two[x]\t1.50\tgw0\t103.00\t105.00\n",
         "tests/test_b.py::test_three\t4.00\tgw1\t100.50\t110.00\n"]


def test_modules_are_summed_costliest_first():
    assert per_module(LINES) == [("tests/test_b.py", 4.0, 1), ("tests/test_a.py", 3.5, 2)]


def test_each_worker_has_its_cpu_busy_time_and_end_from_the_first_start():
    assert per_worker(LINES) == [("gw0", 3.5, 5.0, 5.0), ("gw1", 4.0, 9.5, 10.0)]
    assert per_worker(["tests/test_a.py::test_one\t2.00\n"]) == []  # an older record without the timeline
