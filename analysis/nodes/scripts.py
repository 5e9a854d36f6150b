"""The reviewed scripts goodput writes and never runs: drain.sh (Slurm, scontrol) and kubectl.sh (Kubernetes).
One bash template serves both (docs/node-exports.md): the options, the age limit, the live-state checks, the
run-time drain cap, the log and the one function every change goes through are written once, here; a backend
gives only what differs: how the live state is read and classified, and the commands of each action.

What goodput decided is embedded in the script as a plan, one line per node: ``host|action|expected|state|reason``
(action drain_now, drain_after_job or resume; expected: the live class the export planned against, in_service or
out; state: what Slurm had for the node in the warehouse, ``-`` for none; reason: the reason text). Every field is
plain text (SAFE_HOST names, reasons through exports.drain_reason's character set): the plan is a quoted here-document
and nothing in it is ever expanded by the shell.

The tags below are how a script knows a drain is goodput's own, the only kind it ever resumes: keep them stable,
a drain written under another tag is never resumed by a later export."""
from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.settings import ExportConfig

# Slurm: every drain goodput writes has a Reason starting with this (drain.sh resumes only those)
SLURM_TAG = "goodput:"
# Kubernetes: the taint kubectl.sh sets (goodput.io/drain=<action>:<effect>); its key is the tag
K8S_TAINT_KEY = "goodput.io/drain"
# Kubernetes: the annotation holding the reason text beside the taint (a taint value cannot hold it)
K8S_REASON_ANNOTATION = "goodput.io/reason"
# ... and the time kubectl.sh cordoned it: what ties the reason to the cordon's kubelet Event when the Node objects
# are read back (sql/schema/k8s_objects.sql, k8s_node_states), so goodput knows its own drains on Kubernetes too
K8S_DRAINED_AT_ANNOTATION = "goodput.io/drained-at"
# node_conditions.json: the condition type goodput publishes per node (node-problem-detector's shape)
CONDITION_TYPE = "GoodputDrainRecommended"

ACTIONS = ("drain_now", "drain_after_job", "resume")
# what drain.sh sets for each drain (scontrol update NodeName=... State=...)
SLURM_STATE = {"drain_now": "DOWN", "drain_after_job": "DRAIN"}
EXPECTED = ("in_service", "out")
DEFAULT_MAX_AGE_HOURS = ExportConfig.max_age_hours
_PLAIN = re.compile(r"^[A-Za-z0-9._-]+$")
_FIELD = re.compile(r"^[A-Za-z0-9 _.:=,/()+*-]*$")  # no quote, no |, no $, no newline


@dataclass(frozen=True)
class Step:
    """One planned node: what to do, and the state the export planned against."""
    host: str
    action: str  # drain_now, drain_after_job, resume
    expected: str  # in_service or out: the live class the decision was taken for
    state: str  # Slurm's state in the warehouse, "-" when in service
    reason: str

    def line(self) -> str:
        for value in (self.state, self.reason):
            if not _FIELD.match(value) or "|" in value:
                raise ValueError(f"unsafe text in a plan line: {value!r}")
        if not _PLAIN.match(self.host) or self.action not in ACTIONS or self.expected not in EXPECTED:
            raise ValueError(f"not a plan line: {self}")
        return f"{self.host}|{self.action}|{self.expected}|{self.state}|{self.reason}"


@dataclass(frozen=True)
class Meta:
    """What the script is told about its export: when it was made, the fleet and the cap."""
    created_at: int  # epoch seconds
    created_iso: str
    as_of: str
    fleet: int
    limit: int
    cap_text: str  # how the limit was set, for the messages
    max_age_hours: int = DEFAULT_MAX_AGE_HOURS
    cluster: str | None = None
    no_execute: bool = False  # kubectl.sh: drain_now taints NoExecute


# ---------------------------------------------------------------------------------------------------------------
# The shared part. @NAME@ placeholders are filled in by render(); everything else is bash as written.

_USAGE = r"""#
# Usage: ./@SCRIPT@ [--apply] [--max-age HOURS] [--stale-ok] [--force-cap --why TEXT]
#   (no option)       dry run: read the live state, check, and print every command it would run; change nothing
#   --apply           run those commands
#   --max-age HOURS   refuse an export older than this many hours (default @MAX_AGE@)
#   --stale-ok        run an export older than --max-age anyway
#   --force-cap       go past the drain cap; needs --why TEXT; who and why are printed and appended to @LOG@
#   --why TEXT        why the cap is forced
#   -h, --help        this text
# Every run, before any change:
#   1. refuses when this export is older than --max-age (it was written at CREATED_AT below);
#   2. reads the live state of every node once (@LIVE@);
#   3. skips every planned node whose live state is not the one the export planned against (drained,
#      resumed, repaired or rebooted since), and says so; a node already out is left alone, its reason kept;
#   4. resumes only nodes out under goodput's own tag (@TAG_TEXT@), never one a person or another
#      tool took out;
#   5. counts the nodes goodput would have out afterwards (out under its tag now, minus the resumes, plus
#      the drains) and refuses above the cap (CAP below) unless --force-cap --why TEXT.
# Every change goes through the function act, which prints it, and runs it only with --apply (then
# appends it to @LOG@).
# Exit status: 0 done (a dry run too), 2 usage, 3 export too old, 4 over the cap, 5 live state unreadable,
# 6 a command failed.
"""

_ENGINE = r"""
if ((BASH_VERSINFO[0] < 4)); then
  echo "${0##*/}: needs bash 4 or later" >&2
  exit 1
fi
APPLY=0
STALE_OK=0
FORCE_CAP=0
WHY=""
CHECKED=0
ACTING=""
FAILED=0
LOG="$(cd "$(dirname "$0")" && pwd)/@LOG@"

say() { printf '%s\n' "$*"; }
refuse() {
  local code=$1
  shift
  printf '%s: %s\n' "${0##*/}" "$*" >&2
  exit "$code"
}
usage() { sed -n '/^# Usage:/,/^# 6 a command failed/s/^# \{0,1\}//p' "$0"; }
who() {
  local me
  me=$(id -un 2>/dev/null || printf '%s' "${USER:-unknown}")
  if [[ -n ${SUDO_USER:-} && ${SUDO_USER} != "$me" ]]; then me+=" (sudo by $SUDO_USER)"; fi
  printf '%s' "$me"
}
shquote() {  # the words as a shell would need them typed
  local w out=""
  for w in "$@"; do
    if [[ $w =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then out+=" $w"; else out+=" '${w//\'/\'\\\'\'}'"; fi
  done
  printf '%s' "${out# }"
}
log() { printf '%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(who)" "$*" >>"$LOG"; }

run() {  # a command that changes a node: only from act, after the checks; printed, run only with --apply
  [[ $CHECKED == 1 && -n $ACTING ]] || refuse 1 "internal error: a change outside act"
  if (( APPLY )); then
    say "  run: $(shquote "$@")"
    if "$@"; then log "ran: $(shquote "$@")"; else FAILED=$((FAILED + 1)); log "FAILED: $(shquote "$@")"; say "  FAILED"; fi
  else
    say "  would run: $(shquote "$@")"
  fi
}

act() {  # the one way a node is changed: only what the checks decided for it
  local host=$1
  local action=${DECISION[$host]-}
  [[ $CHECKED == 1 ]] || refuse 1 "internal error: act before the checks"
  case $action in
    drain_now | drain_after_job | resume) ;;
    *) refuse 1 "internal error: nothing was decided for $host" ;;
  esac
  ACTING=$host
  say "$action $host: ${REASON[$host]}"
  "do_$action" "$host" "${REASON[$host]}"
  ACTING=""
}

while (($#)); do
  case $1 in
    --apply) APPLY=1 ;;
    --stale-ok) STALE_OK=1 ;;
    --force-cap) FORCE_CAP=1 ;;
    --why)
      (($# >= 2)) || refuse 2 "--why needs a text"
      WHY=$2
      shift
      ;;
    --why=*) WHY=${1#--why=} ;;
    --max-age)
      (($# >= 2)) || refuse 2 "--max-age needs a number of hours"
      MAX_AGE_HOURS=$2
      shift
      ;;
    --max-age=*) MAX_AGE_HOURS=${1#--max-age=} ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) refuse 2 "unknown option $1 (--help lists them)" ;;
  esac
  shift
done
[[ $MAX_AGE_HOURS =~ ^[0-9]+$ ]] || refuse 2 "--max-age takes whole hours, not $MAX_AGE_HOURS"
if ((FORCE_CAP)) && [[ -z ${WHY//[[:space:]]/} ]]; then refuse 2 "--force-cap needs --why TEXT"; fi
if ((!FORCE_CAP)) && [[ -n $WHY ]]; then refuse 2 "--why goes with --force-cap"; fi

# 1. the age of this export
NOW=$(date +%s)
AGE=$((NOW - CREATED_AT))
if ((AGE > MAX_AGE_HOURS * 3600)); then
  if ((STALE_OK)); then
    say "WARNING: this export is $((AGE / 3600)) h old (written $CREATED_ISO), over --max-age $MAX_AGE_HOURS h; --stale-ok: going on"
  else
    refuse 3 "this export is $((AGE / 3600)) h old (written $CREATED_ISO), over --max-age $MAX_AGE_HOURS h: nodes may have been repaired or drained since; export again (goodput export), or --stale-ok"
  fi
fi
MODE="dry run: nothing is changed (--apply to act)"
if ((APPLY)); then MODE="applying"; fi
say "export of $CREATED_ISO (as of $AS_OF), $((AGE / 3600)) h old; $MODE"

# 2. the live state: host|class|tagged|state|reason, class up, out or other
declare -A L_CLASS L_TAG L_STATE L_REASON DECISION REASON
LIVE=$(read_live) || refuse 5 "cannot read the live node state ($LIVE_TEXT): nothing done"
while IFS='|' read -r h c t s r; do
  [[ -n $h && -z ${L_CLASS[$h]+x} ]] || continue
  L_CLASS[$h]=$c
  L_TAG[$h]=$t
  L_STATE[$h]=$s
  L_REASON[$h]=${r:0:200}
done <<<"$LIVE"
((${#L_CLASS[@]})) || refuse 5 "the live state ($LIVE_TEXT) names no node: nothing done"
OURS=0
for h in "${!L_CLASS[@]}"; do
  if [[ ${L_CLASS[$h]} == out && ${L_TAG[$h]} == 1 ]]; then OURS=$((OURS + 1)); fi
done

# 3, 4. each planned node against its live state
DRAINS=()
RESUMES=()
SKIPPED=0
said() { [[ -n ${L_REASON[$1]} ]] && printf ' (reason: %s)' "${L_REASON[$1]}" || true; }
while IFS='|' read -r host action expected wstate reason; do
  [[ -n $host ]] || continue
  cls=${L_CLASS[$host]-absent}
  if [[ $cls == absent ]]; then
    say "skip $host: not in the live node list"
    SKIPPED=$((SKIPPED + 1))
    continue
  fi
  now_state=${L_STATE[$host]}
  if [[ $action == resume ]]; then
    if [[ $cls == out && ${L_TAG[$host]} == 1 ]]; then
      DECISION[$host]=resume
      REASON[$host]=$reason
      RESUMES+=("$host")
    elif [[ $cls == out ]]; then
      say "left alone $host: out ($now_state) but not under goodput's tag$(said "$host"): a person or another tool took it out; never resumed here"
    elif [[ $cls == up ]]; then
      say "nothing to do for $host: already back in service ($now_state)"
    else
      say "skip $host: live state $now_state, not the drain the export planned to resume"
      SKIPPED=$((SKIPPED + 1))
    fi
  elif [[ $expected == in_service ]]; then
    if [[ $cls == up ]]; then
      DECISION[$host]=$action
      REASON[$host]=$reason
      DRAINS+=("$host")
    elif [[ $cls == out ]]; then
      say "left alone $host: already out now ($now_state)$(said "$host"); goodput would $action it"
    else
      say "skip $host: live state $now_state (rebooting, powered down or not responding), not the in-service state the export planned against"
      SKIPPED=$((SKIPPED + 1))
    fi
  else
    if [[ $cls == out ]]; then
      say "left alone $host: out ($now_state)$(said "$host"), as when exported ($wstate); goodput would $action it"
    else
      say "skip $host: it was $wstate when exported and is $now_state now (repaired or resumed since): the export's decision is stale for it"
      SKIPPED=$((SKIPPED + 1))
    fi
  fi
done <<<"$(plan)"

# 5. the cap over what this run would do now
N_DRAIN=${#DRAINS[@]}
N_RESUME=${#RESUMES[@]}
AFTER=$((OURS - N_RESUME + N_DRAIN))
say "cap: $OURS node(s) out under goodput's tag now; this run drains $N_DRAIN, resumes $N_RESUME: $AFTER of $FLEET nodes, cap $CAP ($CAP_TEXT)"
if ((N_DRAIN > 0 && AFTER > CAP)); then
  if ((!FORCE_CAP)); then
    refuse 4 "$AFTER nodes would be out under goodput's tag, over the cap of $CAP: check the plan and the nodes; --force-cap --why TEXT to go on. Nothing done"
  fi
  say "FORCED past the cap by $(who): $WHY"
  if ((APPLY)); then log "forced past the cap: $AFTER > $CAP ($N_DRAIN drains, $N_RESUME resumes, export $CREATED_ISO): $WHY"; fi
fi

CHECKED=1
for h in ${RESUMES[@]+"${RESUMES[@]}"}; do act "$h"; done
for h in ${DRAINS[@]+"${DRAINS[@]}"}; do act "$h"; done
if ((APPLY)); then
  say "done: $N_DRAIN drained, $N_RESUME resumed, $SKIPPED skipped, $FAILED command(s) failed (log: $LOG)"
  ((FAILED == 0)) || exit 6
else
  say "dry run: $N_DRAIN to drain, $N_RESUME to resume, $SKIPPED skipped; nothing changed (--apply to act)"
fi
"""

# ---------------------------------------------------------------------------------------------------------------
# Slurm

_SLURM_DOC = r"""#
# drain_after_job: State=DRAIN: no new job starts on the node; the running ones run to completion.
# drain_now: State=DOWN: Slurm also stops the jobs running on it now (scontrol(1): "Stop all running
# and suspended jobs"); edit the plan line to drain_after_job to let those jobs finish.
# resume: State=RESUME, only for a node whose live Reason starts with goodput's tag.
"""

_SLURM = r"""
TAG='@TAG@'
SCONTROL=(scontrol@CLUSTERS@)
SINFO=(sinfo@CLUSTERS@)
LIVE_TEXT="scontrol --oneline show node, else sinfo -N"

slurm_class() {  # CLS: out (drained, draining, down, fail), other (not responding, rebooting, powered down, unknown), up
  local s=${1^^} t
  local -a parts
  CLS=up
  if [[ $s == *[\*~#\!%@^]* ]]; then CLS=other; fi
  s=${s//[^A-Z_+]/}
  IFS='+' read -ra parts <<<"$s"
  for t in ${parts[@]+"${parts[@]}"}; do
    case $t in
      DOWN | DRAIN | DRAINED | DRAINING | DRNG | FAIL | FAILING | FAILG)
        CLS=out
        return
        ;;
      NOT_RESPONDING | NO_RESPOND | UNKNOWN | UNK | FUTURE | FUTR | INVAL | POWER_DOWN | POWERED_DOWN | POWERING_DOWN | POW_DN | POWERING_UP | POW_UP | REBOOT_REQUESTED | REBOOT_ISSUED) CLS=other ;;
    esac
  done
  [[ -n $s ]] || CLS=other
}
emit() {  # host state reason
  local tagged=0
  if [[ $3 == "$TAG"* ]]; then tagged=1; fi
  slurm_class "$2"
  printf '%s|%s|%s|%s|%s\n' "$1" "$CLS" "$tagged" "$2" "$3"
}
read_live() {
  local out line host state reason
  local re_name='(^|[[:space:]])NodeName=([^[:space:]]+)' re_state='[[:space:]]State=([^[:space:]]+)'
  local re_reason='[[:space:]]Reason=(.*)$'
  if out=$("${SCONTROL[@]}" --oneline show node); then
    while IFS= read -r line; do
      [[ $line =~ $re_name ]] || continue
      host=${BASH_REMATCH[2]}
      state=""
      reason=""
      if [[ $line =~ $re_state ]]; then state=${BASH_REMATCH[1]}; fi
      if [[ $line =~ $re_reason ]]; then reason=${BASH_REMATCH[1]}; fi
      reason=${reason%% \[*@*\]*}  # scontrol appends [user@time], and may print fields after it
      emit "$host" "$state" "$reason"
    done <<<"$out"
  elif out=$("${SINFO[@]}" -N -h -o '%N|%T|%E'); then  # one line per node and partition: the first one counts
    while IFS='|' read -r host state reason; do
      [[ -n $host && -n $state ]] || continue
      if [[ $reason == none ]]; then reason=""; fi
      emit "$host" "$state" "$reason"
    done <<<"$out"
  else
    return 1
  fi
}
do_drain_now() { run "${SCONTROL[@]}" update "NodeName=$1" State=@STATE_drain_now@ "Reason=$2"; }
do_drain_after_job() { run "${SCONTROL[@]}" update "NodeName=$1" State=@STATE_drain_after_job@ "Reason=$2"; }
do_resume() { run "${SCONTROL[@]}" update "NodeName=$1" State=RESUME; }
"""

# ---------------------------------------------------------------------------------------------------------------
# Kubernetes

_K8S_DOC = r"""#
# drain_after_job: kubectl cordon, and taint @TAINT@=drain_after_job:NoSchedule: no new pod is scheduled on
# the node; the running ones run on.
# drain_now: @DRAIN_NOW_DOC@
# resume: taint @TAINT@- and kubectl uncordon, only for a node carrying goodput's taint (@TAINT@).
# The reason text is kept in the annotation @ANNOTATION@, the time of the drain in @AT_ANNOTATION@.
# Run it with the kubeconfig of the cluster the export is for (KUBECONFIG, or kubectl's current context).
"""

_K8S = r"""
TAINT_KEY='@TAINT@'
REASON_KEY='@ANNOTATION@'
AT_KEY='@AT_ANNOTATION@'
DRAIN_NOW_EFFECT=@EFFECT@
KUBECTL=(kubectl)
LIVE_TEXT="kubectl get nodes"
# name|spec.unschedulable|taints key=value:effect,...|Ready condition status
JSONPATH='{range .items[*]}{.metadata.name}{"|"}{.spec.unschedulable}{"|"}{range .spec.taints[*]}{.key}{"="}{.value}{":"}{.effect}{","}{end}{"|"}{range .status.conditions[?(@.type=="Ready")]}{.status}{end}{"\n"}{end}'

read_live() {  # out: cordoned or under goodput's taint; other: not Ready; tagged: goodput's taint is on it
  local out name unschedulable taints ready cls tagged state
  out=$("${KUBECTL[@]}" get nodes -o "jsonpath=$JSONPATH") || return 1
  while IFS='|' read -r name unschedulable taints ready; do
    [[ -n $name ]] || continue
    tagged=0
    if [[ ,$taints == *",$TAINT_KEY="* ]]; then tagged=1; fi
    cls=up
    state=schedulable
    if [[ $unschedulable == true ]]; then state=cordoned; fi
    if [[ $ready != True ]]; then state+=",Ready=${ready:-Unknown}"; fi
    if [[ $unschedulable == true || $tagged == 1 ]]; then cls=out; elif [[ $ready != True ]]; then cls=other; fi
    printf '%s|%s|%s|%s|%s\n' "$name" "$cls" "$tagged" "$state" "${taints%,}"
  done <<<"$out"
}
do_drain_after_job() {
  run "${KUBECTL[@]}" cordon "$1"
  run "${KUBECTL[@]}" taint nodes "$1" "$TAINT_KEY=drain_after_job:NoSchedule" --overwrite
  run "${KUBECTL[@]}" annotate node "$1" "$REASON_KEY=$2" "$AT_KEY=$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite
}
do_drain_now() {
  run "${KUBECTL[@]}" cordon "$1"
  run "${KUBECTL[@]}" taint nodes "$1" "$TAINT_KEY=drain_now:$DRAIN_NOW_EFFECT" --overwrite
  run "${KUBECTL[@]}" annotate node "$1" "$REASON_KEY=$2" "$AT_KEY=$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite
}
do_resume() {
  run "${KUBECTL[@]}" taint nodes "$1" "$TAINT_KEY-"
  run "${KUBECTL[@]}" annotate node "$1" "$REASON_KEY-" "$AT_KEY-"
  run "${KUBECTL[@]}" uncordon "$1"
}
"""

_DRAIN_NOW_SCHEDULE = ("kubectl cordon, and taint {t}=drain_now:NoSchedule: the same as drain_after_job, the running "
                       "pods are NOT\n# evicted (the export was written without --no-execute; `goodput export "
                       "--no-execute` taints NoExecute).")
_DRAIN_NOW_EXECUTE = ("kubectl cordon, and taint {t}=drain_now:NoExecute: the pods that do not tolerate the taint "
                      "are evicted now\n# (written with `goodput export --no-execute`).")


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def render(backend: str, steps: list[Step], meta: Meta, header: list[str]) -> str:
    """The script for ``backend`` (slurm: drain.sh, kubernetes: kubectl.sh)."""
    if backend == "slurm":
        script, log, doc, part = "drain.sh", "drain.log", _SLURM_DOC, _SLURM
        values = {"TAG": SLURM_TAG, "TAG_TEXT": f"a Reason starting with {SLURM_TAG!r}",
                  "LIVE": "scontrol --oneline show node, else sinfo -N -h -o '%N|%T|%E'",
                  "CLUSTERS": f" --clusters={meta.cluster}" if meta.cluster else "",
                  **{f"STATE_{action}": state for action, state in SLURM_STATE.items()}}
    elif backend == "kubernetes":
        script, log, doc, part = "kubectl.sh", "kubectl.log", _K8S_DOC, _K8S
        values = {"TAINT": K8S_TAINT_KEY, "ANNOTATION": K8S_REASON_ANNOTATION, "AT_ANNOTATION": K8S_DRAINED_AT_ANNOTATION,
                  "TAG_TEXT": f"the taint {K8S_TAINT_KEY}", "LIVE": "kubectl get nodes -o jsonpath=...",
                  "EFFECT": "NoExecute" if meta.no_execute else "NoSchedule",
                  "DRAIN_NOW_DOC": (_DRAIN_NOW_EXECUTE if meta.no_execute else _DRAIN_NOW_SCHEDULE).format(
                      t=K8S_TAINT_KEY)}
    else:
        raise ValueError(f"no script for platform {backend!r}")
    if meta.cluster is not None and not _PLAIN.match(meta.cluster):
        raise ValueError(f"not a plain cluster name: {meta.cluster!r}")
    values |= {"SCRIPT": script, "LOG": log, "MAX_AGE": str(meta.max_age_hours)}
    plan = [s.line() for s in steps]
    constants = [
        f"CREATED_AT={int(meta.created_at)}  # when goodput wrote this file (epoch seconds)",
        f"CREATED_ISO='{meta.created_iso}'",
        f"AS_OF='{meta.as_of}'",
        f"FLEET={int(meta.fleet)}  # nodes in the fleet",
        f"CAP={int(meta.limit)}  # the most nodes goodput may have out at once",
        f"CAP_TEXT='{_safe_text(meta.cap_text)}'",
        f"MAX_AGE_HOURS={int(meta.max_age_hours)}",
    ]
    lines = ["#!/usr/bin/env bash", *[f"# {_one_line(h)}" for h in header],
             "#", f"# goodput never runs this file: review it, then run it as a {_OPERATOR[backend]}."]
    text = "\n".join(lines) + "\n" + _fill(_USAGE, values) + _fill(doc, values) + "set -euo pipefail\n\n"
    text += "# -- the export: the checks compare the live state with this; do not edit it but to drop a line --\n"
    text += "\n".join(constants) + "\n"
    text += _fill(part, values)
    text += "\nplan() {  # host|action|expected live state|state in the warehouse|reason\n"
    text += "  cat <<'GOODPUT_PLAN'\n" + "".join(p + "\n" for p in plan) + "GOODPUT_PLAN\n}\n"
    text += _fill(_ENGINE, values)
    return text


_OPERATOR = {"slurm": "Slurm operator (scontrol update needs SlurmUser or root)",
             "kubernetes": "cluster operator whose kubeconfig may patch nodes"}


def _one_line(text: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]", " ", text)


def _safe_text(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9 _.:=,/()+%-]", "_", text)
