from __future__ import annotations

import os
from datetime import datetime

import polars as pl
import pytest

from analysis import warehouse
from analysis.derive.taxonomy import load
from analysis.ingest.contract import IngestOptions, UnrecognisedFormat
from analysis.ingest.engine import ingest_directory
from analysis.ingest.parsers.switch import SEVERITIES, normalize_port, parse
from assets.pure_builds import build_all
from tests.conftest import FIXTURES, parse_file

COLUMNS = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]
Y2023 = IngestOptions(syslog_year=2023)


def _events(result) -> dict[int, dict]:
    return {row["line_no"]: row for row in result.tables["node_events"].iter_rows(named=True)}


def _write(tmp_path, text: str, name: str = "leaf01.log", mtime: datetime | None = None):
    path = tmp_path / name
    path.write_text(text)
    if mtime:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


@pytest.fixture
def nexus(datasets):
    return datasets / "switch-syslog-nexus"


def test_all_nexus_files_parse_and_account(nexus):
    for name in ["test-nexus.log", "test-nexus-fix.log", "test-nexus-tz-mapping.log"]:
        result, counts = parse_file(parse, nexus / name, "switch")  # asserts the accounting
        events = result.tables["node_events"]
        assert events.columns == COLUMNS
        assert events.schema["event_time"] == pl.Datetime("us")
        assert counts.rejects == 0 and counts.row_lines == counts.lines
        assert events["event_time"].null_count() == 0
        assert events["host"].null_count() == events.height  # mapped later via topology
        assert set(events["source"]) == {"switch"}


def test_nexus_values(nexus):
    result, counts = parse_file(parse, nexus / "test-nexus.log", "switch", Y2023)
    assert counts.lines == 72
    ev = _events(result)
    line2 = ev[2]
    assert line2["event_time"] == datetime(2023, 5, 2, 12, 57, 15)
    assert (line2["kind"], line2["code"], line2["device"], line2["severity"]) == (
        "link_down", "ETHPORT-5-IF_DOWN_ADMIN_DOWN", "eth1/42", "notice")
    assert line2["reporter"] == "test-nexus"  # "<189>: 2023 ..." names no host: the file name does
    assert line2["message"].startswith("%ETHPORT-5-IF_DOWN_ADMIN_DOWN: Interface Ethernet1/42 is down")
    assert ev[1]["kind"] == "repeat" and ev[1]["severity"] == "err"
    assert ev[3]["kind"] == "port_errors" and ev[3]["severity"] == "alert"
    # IF_ADMIN_UP ("Interface Ethernet1/42 is admin up .") ends the port's outage as IF_UP does
    assert (ev[5]["reporter"], ev[5]["kind"], ev[5]["device"]) == ("10.100.0.32", "link_up", "eth1/42")
    # relay stamp 15:21:27 loses to the device stamp with milliseconds and zone
    assert ev[10]["event_time"] == datetime(2023, 5, 2, 15, 21, 27, 206000) and ev[10]["reporter"] == "10.100.0.33"
    # sequence number after the host; AEST (UTC+10) device stamp without a year
    assert ev[20]["event_time"] == datetime(2023, 5, 3, 3, 20, 48, 739000)
    assert (ev[20]["reporter"], ev[20]["device"]) == ("ac508f-sr1", "eth1/33")
    # host followed directly by the device stamp (the year must not be taken for a sequence number)
    assert ev[44]["event_time"] == datetime(2023, 5, 3, 3, 55, 35, 928000)
    assert (ev[44]["kind"], ev[44]["device"]) == ("link_up", "eth1/22")
    # no PRI: "2023 May  1 22:58:09 switchname msg"
    assert ev[29]["reporter"] == "switchname" and ev[29]["device"] == "eth1/14" and ev[28]["severity"] is None
    # "<189>109692: 10.100.0.36: May 9 14:40:12.903:" sequence number first, no zone -> options.tz
    assert ev[31]["event_time"] == datetime(2023, 5, 9, 14, 40, 12, 903000) and ev[31]["reporter"] == "10.100.0.36"
    assert ev[65]["kind"] == "optics" and ev[65]["device"] == "eth2/3"
    assert ev[69]["kind"] == "link_down" and ev[69]["code"] == "LINK-3-UPDOWN" and ev[69]["device"] == "gi2/0/4"
    # "<187>Jun 14 11:34:35 ac45ce-sr1 AEST: %SFF8472..." the 3164 tag is a zone
    assert ev[70]["event_time"] == datetime(2023, 6, 14, 1, 34, 35)
    assert (ev[70]["kind"], ev[70]["device"], ev[70]["reporter"]) == ("optics", "te2/0/17", "ac45ce-sr1")
    assert ev[37]["kind"] == "other"  # "Line Protocol on Interface vlan 20 ... up": no port
    assert ev[63]["message"].endswith("10.208.112.147/32\\n")  # a literal \n is text
    assert ev[71]["code"] == "SEC_LOGIN-SW2-5-LOGIN_SUCCESS" and ev[71]["severity"] == "notice"


def test_nexus_zones(nexus):
    result, _ = parse_file(parse, nexus / "test-nexus-tz-mapping.log", "switch")
    assert result.tables["node_events"]["event_time"].to_list() == [
        datetime(2025, 6, 25, 18, 36, 10), datetime(2025, 6, 25, 19, 41, 12)]  # MST = UTC-7


def test_other_vendors(tmp_path):
    text = "\n".join([
        '<189>1 2023-05-02T12:57:15.123Z leaf01 switchd 1234 - - swp3: setting kernel carrier: down',
        '<187>1 2023-05-02T14:00:00+02:00 spine1 - - ID47 [exampleSDID@32473 iut="3" eventID="1011"]'
        ' Interface swp4 operational state is Down',
        '2017-05-22T11:21:07.153894-04:00 leaf01 switchd[19517]: nic.c:223 nic_set_carrier: swp51:'
        ' setting kernel carrier: down',
        '2017-05-22T11:23:05.152445-04:00 leaf01 switchd[19517]: nic.c:223 nic_set_carrier: swp51:'
        ' setting kernel carrier: up',
        '2017-05-22T11:21:07.086167-04:00 leaf01 switchd[19517]: sync_base.c:604 swp51: ifindex 54, oper down',
        '<173>Dec  7 12:02:06 10.13.110.116 mgmtd[8326]: [mgmtd.NOTICE]: Configuration saved to database initial',
        'Dec  7 12:05:00 ib-sw01 issd[1234]: [issd.WARNING]: Interface IB1/5 changed state to DOWN',
        '2024-03-01T10:00:00.000000+00:00 nvsw01 nvued[88]: Interface swp1 operational state is Up',
        'Jul 17 14:35:27 192.168.172.2 2022 Jul 17 14:35:38.221 UTC: %ETHPORT-5-IF_DOWN_LINK_FAILURE:'
        ' Interface Ethernet104/1/33 is down (Link failure)',
        '<165>Feb  6 09:42:36 veos01 Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface Ethernet28,'
        ' changed state to down',
        '<188>Jun  1 10:00:00 leaf02 portd[77]: swp7: link flap detected, 5 transitions in 10s',
        '<187>1: *Oct  5 10:15:42.551: %LINK-3-UPDOWN: Interface GigabitEthernet0/0/2, changed state to down',
        '<188>Jun  1 10:00:01 leaf02 switchd[77]: swp8: symbol errors increased by 12',
        '<189>Jun  1 10:00:02 leaf02 BGP: neighbor 10.0.0.1 changed state to down',
        '2023-05-02T15:21:30+00:00 10.100.0.33 : 2023 May  2 15:21:27.206 UTC: %ETHPORT-5-IF_DOWN_LINK_FAILURE:'
        ' Interface Ethernet1/7 is down (Link failure)',
        '<189>Jun  1 10:00:03 leaf03 nsm[12]: Interface xe1 changed state from up to down',
    ])
    result, counts = parse_file(parse, _write(tmp_path, text), "switch", Y2023)
    ev = _events(result)
    assert counts.rejects == 0
    assert (ev[1]["event_time"], ev[1]["code"], ev[1]["reporter"], ev[1]["severity"]) == (
        datetime(2023, 5, 2, 12, 57, 15, 123000), "switchd", "leaf01", "notice")
    assert (ev[1]["kind"], ev[1]["device"], ev[1]["message"]) == ("link_down", "swp3", "swp3: setting kernel carrier: down")
    assert ev[2]["event_time"] == datetime(2023, 5, 2, 12, 0) and ev[2]["code"] is None
    assert (ev[2]["kind"], ev[2]["device"], ev[2]["reporter"]) == ("link_down", "swp4", "spine1")
    assert ev[2]["message"] == "Interface swp4 operational state is Down"
    assert ev[3]["event_time"] == datetime(2017, 5, 22, 15, 21, 7, 153894)
    assert (ev[3]["kind"], ev[3]["device"], ev[3]["code"], ev[3]["reporter"]) == ("link_down", "swp51", "switchd", "leaf01")
    assert ev[3]["message"].startswith("nic.c:223") and ev[3]["severity"] is None
    assert ev[4]["kind"] == "link_up"
    # switchd's own oper-state line is a link event too (issue 13): the incident grouping
    # merges it with the carrier line that follows within seconds
    assert (ev[5]["kind"], ev[5]["device"]) == ("link_down", "swp51")
    assert (ev[6]["code"], ev[6]["severity"], ev[6]["reporter"], ev[6]["kind"]) == ("mgmtd", "notice", "10.13.110.116", "other")
    assert ev[6]["event_time"] == datetime(2023, 12, 7, 12, 2, 6)
    assert (ev[7]["kind"], ev[7]["device"], ev[7]["severity"], ev[7]["code"]) == ("link_down", "ib1/5", "warning", "issd")
    assert (ev[8]["kind"], ev[8]["device"], ev[8]["reporter"]) == ("link_up", "swp1", "nvsw01")
    assert ev[9]["event_time"] == datetime(2022, 7, 17, 14, 35, 38, 221000) and ev[9]["reporter"] == "192.168.172.2"
    assert (ev[9]["kind"], ev[9]["device"], ev[9]["code"]) == ("link_down", "eth104/1/33", "ETHPORT-5-IF_DOWN_LINK_FAILURE")
    assert (ev[10]["kind"], ev[10]["device"], ev[10]["code"]) == ("link_down", "eth28", "LINEPROTO-5-UPDOWN")
    assert (ev[11]["kind"], ev[11]["device"], ev[11]["code"]) == ("link_flap", "swp7", "portd")
    assert ev[12]["event_time"] == datetime(2023, 10, 5, 10, 15, 42, 551000)
    assert (ev[12]["kind"], ev[12]["device"], ev[12]["reporter"]) == ("link_down", "gi0/0/2", "leaf01")  # file name
    assert (ev[13]["kind"], ev[13]["device"]) == ("port_errors", "swp8")
    assert ev[14]["kind"] == "other" and ev[14]["code"] == "BGP"  # a routing session, not a port
    # an RFC 3339 relay stamp in front of the NX-OS device stamp: the device stamp wins
    assert ev[15]["event_time"] == datetime(2023, 5, 2, 15, 21, 27, 206000)
    assert (ev[15]["reporter"], ev[15]["device"], ev[15]["kind"]) == ("10.100.0.33", "eth1/7", "link_down")
    assert ev[16]["kind"] == "other" and ev[16]["device"] is None  # xe1 is no port name we map


def test_year_rollover_from_mtime(tmp_path):
    text = ("<189>Dec 31 23:59:58 leaf01 switchd[1]: swp1: setting kernel carrier: down\n"
            "<189>Jan  1 00:00:03 leaf01 switchd[1]: swp1: setting kernel carrier: up\n")
    result, _ = parse_file(parse, _write(tmp_path, text, mtime=datetime(2024, 1, 2, 8, 0)), "switch")
    assert result.tables["node_events"]["event_time"].to_list() == [
        datetime(2023, 12, 31, 23, 59, 58), datetime(2024, 1, 1, 0, 0, 3)]
    # a configured year wins over the mtime and does not roll back
    result, _ = parse_file(parse, _write(tmp_path, text, mtime=datetime(2024, 1, 2)), "switch",
                           IngestOptions(syslog_year=2021))
    assert [t.year for t in result.tables["node_events"]["event_time"]] == [2021, 2021]


def test_unknown_zone_falls_back_to_options_tz(tmp_path):
    text = ("<187>: 2025 Jun 25 11:36:10 XYZ: %DAEMON-3-SYSTEM_MSG: unknown zone\n"
            "<187>: 2025 Jun 25 11:36:10 UTC: %DAEMON-3-SYSTEM_MSG: known zone\n"
            "<187>Jun 25 11:36:10 leaf01 switchd[1]: no zone\n")
    result, _ = parse_file(parse, _write(tmp_path, text), "switch",
                           IngestOptions(tz="America/Denver", syslog_year=2025))
    assert result.tables["node_events"]["event_time"].to_list() == [
        datetime(2025, 6, 25, 17, 36, 10), datetime(2025, 6, 25, 11, 36, 10), datetime(2025, 6, 25, 17, 36, 10)]


def test_garbage_blank_and_bad_dates(tmp_path):
    text = ("<189>May  2 15:21:27 leaf01 switchd[1]: ok\n"
            "\n"
            "   \n"
            "this is not a syslog line\n"
            "<189>Feb 30 10:00:00 leaf01 switchd[1]: impossible date\n")
    result, counts = parse_file(parse, _write(tmp_path, text), "switch", Y2023)
    assert (counts.row_lines, counts.skipped, counts.rejects) == (1, 2, 2)
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert "no switch syslog header" in reasons[4] and "invalid timestamp" in reasons[5]
    assert result.rejects.filter(pl.col("line_no") == 4)["raw"][0] == "this is not a syslog line"


def test_file_without_any_header_is_unrecognised(tmp_path):
    from analysis.ingest.lines import read_lines
    from analysis.ingest.contract import ParseContext
    path = _write(tmp_path, "JobID|State\n1|COMPLETED\n")
    with pytest.raises(UnrecognisedFormat):
        parse(read_lines(path).lines, ParseContext(path=path, source="switch", host_hint=None))


def test_normalize_port_both_sides_agree():
    raw = ["Ethernet1/42", "Eth1/42", "eth 1/42", "swp51", "swp1s0", "IB1/5", "1/5", "GigabitEthernet2/0/4",
           "Gi2/0/4", "Te2/0/17", "TenGigabitEthernet2/0/17", "HundredGigE1/0/1", "Ethernet112",
           "Port-Channel35", "port-channel23", "PortChannel101", "Po35", None]
    out = pl.DataFrame({"p": raw}).select(normalize_port(pl.col("p")))["p"].to_list()
    assert out == ["eth1/42", "eth1/42", "eth1/42", "swp51", "swp1s0", "ib1/5", "1/5", "gi2/0/4",
                   "gi2/0/4", "te2/0/17", "te2/0/17", "hu1/0/1", "eth112", "po35", "po23", "po101", "po35", None]


# --- real lines per network OS (tests/fixtures/switch/README.md names the sources) ---
SWITCH_FIXTURES = FIXTURES / "switch"


def _fixture(name: str, options: IngestOptions = Y2023):
    result, counts = parse_file(parse, SWITCH_FIXTURES / name, "switch", options)  # asserts the accounting
    assert counts.rejects == 0 and counts.row_lines == counts.lines
    return _events(result)


def _summary(ev: dict, fields=("kind", "device", "severity", "code")) -> dict[int, tuple]:
    return {n: tuple(row[f] for f in fields) for n, row in ev.items()}


def test_cumulus_switchd_linkstate():
    ev = _fixture("cumulus-linkstate.log")
    # /var/log/linkstate has no PRI or level: severity stays unknown; the program is the code
    down, up = ("link_down", "swp51", None, "switchd"), ("link_up", "swp51", None, "switchd")
    # admin down/up are link transitions like oper and carrier ones: each says the port's new state
    assert _summary(ev) == {1: down, 2: down, 3: down, 4: up, 5: up, 6: up, 7: down, 8: down, 9: down}
    assert ev[1]["message"] == "sync_base.c:596 swp51: ifindex 54, admin down"  # the taxonomy's admin-down wording
    assert {r["reporter"] for r in ev.values()} == {"leaf01"}
    assert ev[2]["event_time"] == datetime(2017, 5, 22, 15, 21, 7, 86167)  # -04:00 -> UTC


def test_nxos_link_mnemonics():
    ev = _fixture("nxos-napalm-logs.log")
    assert _summary(ev) == {
        1: ("link_down", "eth1/33", "info", "ETH_PORT_CHANNEL-5-PORT_INDIVIDUAL_DOWN"),
        2: ("link_down", "eth1/33", "info", "ETHPORT-5-IF_DOWN_LINK_FAILURE"),
        3: ("link_up", "eth1/33", "info", "ETHPORT-5-IF_UP"),
        4: ("link_down", "eth1/3", "info", "ETHPORT-5-IF_DOWN_ERROR_DISABLED")}
    assert ev[1]["reporter"] == "nexus-switch" and ev[1]["event_time"] == datetime(2018, 4, 20, 13, 15, 7)
    assert ev[4]["reporter"] == "sw01.test"


def test_nxos_port_channel_member_lines(tmp_path):
    # Cisco's format for ETH_PORT_CHANNEL-5-PORT_DOWN/PORT_UP is "[chars]: [chars] is down|up":
    # the member port is the link, not the channel; no PRI, so the mnemonic's level counts.
    text = ("2019 Apr 25 10:58:42 nx01 %ETH_PORT_CHANNEL-5-PORT_DOWN: port-channel23: Ethernet1/15 is down\n"
            "2019 Apr 25 10:59:02 nx01 %ETH_PORT_CHANNEL-5-PORT_UP: port-channel23: Ethernet1/15 is up\n"
            "2019 Apr 25 10:59:03 nx01 %ETH_PORT_CHANNEL-5-FOP_CHANGED: port-channel23: first operational"
            " port changed from Ethernet1/15 to Ethernet1/16\n")
    result, _ = parse_file(parse, _write(tmp_path, text, "nx01.log"), "switch")
    assert _summary(_events(result), ("kind", "device", "severity")) == {
        1: ("link_down", "eth1/15", "notice"), 2: ("link_up", "eth1/15", "notice"), 3: ("other", "eth1/15", "notice")}


def test_sonic_swss_lines():
    ev = _fixture("sonic.log")
    got = _summary(ev)
    # orchagent's oper-state line and its host-interface line both report the transition
    assert got[3] == got[4] == ("link_down", "eth112", "notice", "orchagent")
    assert got[5] == ("link_down", "eth164", "notice", "orchagent")
    assert got[6] == ("link_up", "eth164", "notice", "orchagent")
    assert got[9] == ("link_down", "eth0", "notice", "portmgrd")  # admin down: the taxonomy reads the wording
    # admin up (orchagent, portmgrd; teammgrd for a port channel) is a link up as admin down is a link down
    assert got[7] == ("link_up", "eth0", "notice", "orchagent")
    assert got[10] == ("link_up", "eth120", "notice", "portmgrd")
    assert got[8] == ("link_up", "po101", "notice", "teammgrd")
    # netlink dumps, a failed attempt, creating the host interface and startup housekeeping report no transition
    for n, prog in [(11, "portsyncd"), (13, "orchagent"), (14, "portsyncd"), (15, "portsyncd")]:
        assert got[n][0] == "other" and got[n][3] == prog, n
    assert got[12] == ("other", "eth0", "warning", "orchagent")  # "WARNING #orchagent": empty container
    assert got[1] == ("other", None, "info", "syncd")  # an ASIC port number, no port name
    assert ev[1]["reporter"] == "str2-7050cx3-acs-14" and ev[1]["message"].startswith("[none] SAI_API_PORT")
    assert ev[3]["message"] == ":- updatePortOperStatus: Port Ethernet112 oper state set from up to down"
    assert ev[3]["event_time"] == datetime(2024, 6, 5, 2, 21, 24, 818583)  # year in the stamp wins
    assert ev[5]["event_time"] == datetime(2023, 1, 24, 7, 28, 22, 148615)  # year-less: configured year


def test_eos_link_lines():
    ev = _fixture("eos.log")
    got = _summary(ev)
    assert got[1] == ("link_down", "eth28", "notice", "LINEPROTO-5-UPDOWN")
    assert got[2] == ("link_up", "eth28", "notice", "LINEPROTO-5-UPDOWN")  # description in parentheses
    assert got[3] == ("other", None, "notice", "BGP-5-ADJCHANGE")  # <13>: user.notice, ISO stamp
    assert ev[3]["reporter"] == "some-switch" and ev[3]["event_time"] == datetime(2020, 3, 31, 8, 41, 59)
    # BPDU guard shuts a server bond: errdisable, MLAG and line protocol all take it down
    assert got[5] == ("link_down", "po35", "warning", "ETH-4-ERRDISABLE")
    assert got[6] == ("link_down", "po35", "warning", "MLAG-4-INTF_INACTIVE_LOCAL")
    assert got[7] == ("link_down", "po35", "notice", "LINEPROTO-5-UPDOWN")
    assert got[9] == ("link_down", "eth35", "notice", "LINEPROTO-5-UPDOWN")
    assert got[4][0] == got[8][0] == "other"  # spanning-tree bookkeeping
    assert {ev[n]["reporter"] for n in range(4, 10)} == {"SW-1"}


def test_eos_mac_flapping_is_no_link_flap(tmp_path):
    # EOS PortSec MAC-move wording: a host moving between ports, the links stay up
    text = ("Jul 10 01:59:56 leaf39 PortSec: %ETH-4-HOST_FLAPPING: Host 00:00:5E:11:11:11 in VLAN 3633 is flapping"
            " between interface Ethernet39 and interface Port-Channel53 (message repeated 2 times in 6.13858 secs)\n"
            "<188>Jun  1 10:00:00 leaf02 portd[77]: swp7: link flap detected, 5 transitions in 10s\n")
    result, _ = parse_file(parse, _write(tmp_path, text), "switch", Y2023)
    ev = _events(result)
    assert (ev[1]["kind"], ev[1]["severity"], ev[1]["code"]) == ("other", "warning", "ETH-4-HOST_FLAPPING")
    assert ev[2]["kind"] == "link_flap"


# Message text (after the header) of real lines from each NOS, with its program.
_REAL_MESSAGES = [
    ("switchd", "sync_base.c:604 swp51: ifindex 54, oper down", "link_down", "swp51", "switchd"),
    ("switchd", "netlink.c:291 libnl: swp1, family 0, ifi 20, oper down", "link_down", "swp1", "switchd"),
    ("switchd", "netlink.c:291 libnl: swp17, family 0, ifi 20, oper up", "link_up", "swp17", "switchd"),
    ("swss#orchagent", ":- setHostIntfsOperStatus: Set operation status UP to host interface Ethernet164",
     "link_up", "eth164", "orchagent"),
    ("Ebra", "%LINEPROTO-5-UPDOWN: Line protocol on Interface Ethernet28, changed state to down",
     "link_down", "eth28", "LINEPROTO-5-UPDOWN"),
    ("Ebra", "%ETH-4-ERRDISABLE: uplink-failure-detection error detected on Ethernet5.",
     "link_down", "eth5", "ETH-4-ERRDISABLE"),
]
# The same message as collectors store it: RFC 5424 and 3164, with and without PRI,
# and behind a relay that writes its own stamp and sender first.
_HEADERS = [
    ("<189>1 2023-05-02T12:57:15.123Z leaf01 {app} 1234 - - ", "notice"),
    ("<187>May  2 12:57:15 leaf01 {tag}[1234]: ", "err"),
    ("May  2 12:57:15 leaf01 {tag}: ", None),
    ("2023-05-02T12:57:15+00:00 leaf01 {tag}: ", None),
    ("May  2 12:57:16 10.0.0.9 <190>May  2 12:57:15 leaf01 {tag}[1234]: ", "info"),
    ("<14>2023-05-02T12:57:16.5+00:00 relay01 <188>May  2 12:57:15 leaf01 {tag}: ", "warning"),  # the switch's PRI
    ("2023-05-02T12:57:16+00:00 relay01 2023-05-02T12:57:15+00:00 leaf01 {tag}: ", None),
]


def test_real_messages_under_every_header(tmp_path):
    lines, expected = [], []
    for tag, msg, kind, device, code in _REAL_MESSAGES:
        for header, pri_severity in _HEADERS:
            lines.append(header.format(app=tag.split("#")[-1], tag=tag) + msg)
            level = msg.split("-")[1] if msg.startswith("%") else None  # the mnemonic's digit
            severity = pri_severity or (SEVERITIES[int(level)] if level else None)
            expected.append((kind, device, code, severity, "leaf01", datetime(2023, 5, 2, 12, 57, 15), msg))
    result, counts = parse_file(parse, _write(tmp_path, "\n".join(lines) + "\n"), "switch", Y2023)
    assert counts.rejects == 0
    fields = ("kind", "device", "code", "severity", "reporter")
    got = [tuple(r[f] for f in fields) + (r["event_time"].replace(microsecond=0), r["message"])
           for r in result.tables["node_events"].sort("line_no").iter_rows(named=True)]
    assert got == expected


def test_admin_state_lines_under_every_header(tmp_path):
    """Admin up and down of a port or port channel are link transitions (teammgrd's "Set port channel %s admin
    status to %s", Cumulus switchd's "admin up|down"); a failed attempt is none."""
    cases = [("teamd#teammgrd", ":- setLagAdminStatus: Set port channel PortChannel101 admin status to up",
              "link_up", "po101", "teammgrd"),
             ("teamd#teammgrd", ":- setLagAdminStatus: Set port channel PortChannel101 admin status to down",
              "link_down", "po101", "teammgrd"),
             ("switchd", "sync_base.c:596 swp51: ifindex 54, admin up", "link_up", "swp51", "switchd"),
             ("switchd", "sync_base.c:596 swp51: ifindex 54, admin down", "link_down", "swp51", "switchd"),
             ("swss#orchagent", ":- doPortTask: Failed to set port Ethernet8 admin status to up",
              "other", "eth8", "orchagent")]
    lines = [header.format(app=tag.split("#")[-1], tag=tag) + msg for tag, msg, *_ in cases for header, _ in _HEADERS]
    result, counts = parse_file(parse, _write(tmp_path, "\n".join(lines) + "\n"), "switch", Y2023)
    assert counts.rejects == 0
    got = [(r["kind"], r["device"], r["code"]) for r in result.tables["node_events"].sort("line_no").iter_rows(named=True)]
    assert got == [tuple(case[2:]) for case in cases for _ in _HEADERS]


def test_a_down_and_the_admin_up_after_it_pair_on_the_port(tmp_path):
    """Through ingest, the cabling map and the taxonomy: a failure's oper/carrier down and the admin up that
    ends it land on the same host and port as one outage (one node incident: the downs; the up, info, closes
    it), as oper down/up pairs do; an operator's admin down/up of a port channel is info both ways (no incident)."""
    src = tmp_path / "src"
    for d in ("switch", "topology"):
        (src / d).mkdir(parents=True)
    (src / "switch" / "leaf01.log").write_text(
        "2024-03-05T10:00:00.085595+00:00 leaf01 switchd[19517]: sync_base.c:604 swp51: ifindex 54, oper down\n"
        "2024-03-05T10:00:00.153894+00:00 leaf01 switchd[19517]: nic.c:223 nic_set_carrier: swp51: setting kernel"
        " carrier: down\n"
        "2024-03-05T10:04:02.968972+00:00 leaf01 switchd[19517]: sync_base.c:596 swp51: ifindex 54, admin up\n")
    (src / "switch" / "sonic01.log").write_text(
        "2024 Mar  5 11:00:35.769479 sonic01 NOTICE teamd#teammgrd: :- setLagAdminStatus: Set port channel"
        " PortChannel101 admin status to down\n"
        "2024 Mar  5 11:02:35.772803 sonic01 NOTICE teamd#teammgrd: :- setLagAdminStatus: Set port channel"
        " PortChannel101 admin status to up\n")
    (src / "topology" / "cabling.csv").write_text(
        "switch,port,host,hca\nleaf01,swp51,node01,mlx5_0\nsonic01,PortChannel101,node02,bond0\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert {o.status for o in ingest_directory(con, src).outcomes} == {"ok"}
    build_all(con, load())
    got = con.sql("SELECT host, device, kind, rule, severity FROM classified_events WHERE source = 'switch' "
                  "ORDER BY event_time").fetchall()
    assert got == [("node01", "swp51", "link_down", "switch-link-down", "warning")] * 2 + [
        ("node01", "swp51", "link_up", "switch-link-up", "info"),
        ("node02", "po101", "link_down", "switch-admin-down", "info"),
        ("node02", "po101", "link_up", "switch-link-up", "info")]
    incidents = con.sql("SELECT host, cause, events FROM node_incidents").fetchall()
    assert incidents == [("node01", "infiniband_link", 2)]
    # each down and the up that ends it are one outage in link_outages
    outages = con.sql("SELECT switch, port, host, outage_s, down_lines FROM link_outages ORDER BY down_time").fetchall()
    assert outages == [("leaf01", "swp51", "node01", pytest.approx(242.883, abs=1e-3), 2),
                       ("sonic01", "po101", "node02", pytest.approx(120.003, abs=1e-3), 1)]
    con.close()
