"""The Kubernetes deployment of the fleet (deploy/, docs/fleet.md#on-kubernetes) holds together: the image serves
the fleet code location from the wheel, the run pods mount the volume the settings point at, and the instance's
run launcher config is valid for dagster-k8s's K8sRunLauncher (when dagster-k8s is installed: `goodput[k8s]`).
No image is built and no cluster is used here."""
import importlib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
SETTINGS = ("GOODPUT_FLEET_SOURCE", "GOODPUT_FLEET_DB_DIR", "GOODPUT_OUT")


def _mounted_under(env: dict[str, str], mount: str) -> None:
    for name in SETTINGS:
        assert env[name].startswith(mount + "/"), name  # every fleet folder is on the shared volume


def test_the_image_installs_the_wheel_and_serves_the_fleet_code_location():
    steps = (DEPLOY / "Dockerfile").read_text()
    assert steps.index("torch==2.13.0") < steps.index("goodput-*.whl")  # the CPU wheel of torch first
    assert "[k8s]" in steps and "download.pytorch.org/whl/cpu" in steps
    served = steps.split("CMD", 1)[1]
    module = served.split('"-m", "')[1].split('"')[0]
    assert importlib.util.find_spec(module) is not None and module == "pipelines.fleet_definitions"


def test_the_helm_values_mount_the_claimed_volume_where_the_settings_point():
    values = yaml.safe_load((DEPLOY / "k8s" / "values.yaml").read_text())
    claim = yaml.safe_load((DEPLOY / "k8s" / "storage.yaml").read_text())
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    (code,) = values["dagster-user-deployments"]["deployments"]
    assert code["dagsterApiGrpcArgs"] == ["-m", "pipelines.fleet_definitions"]
    assert code["includeConfigInLaunchedRuns"]["enabled"]  # the run pods get the env and the volume
    (volume,) = code["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    (mount,) = code["volumeMounts"]
    assert mount["name"] == volume["name"]
    _mounted_under({e["name"]: e["value"] for e in code["env"]}, mount["mountPath"])
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]["maxConcurrentRuns"] >= 1


def test_the_instance_yaml_is_valid_for_dagster_and_its_run_launcher(tmp_path):
    from dagster._core.instance.config import dagster_instance_config

    source = DEPLOY / "k8s" / "dagster.yaml"
    config = yaml.safe_load(source.read_text())
    launcher = config["run_launcher"]["config"]
    mount = launcher["volume_mounts"][0]["mountPath"]
    _mounted_under(dict(v.split("=", 1) for v in launcher["env_vars"]), mount)
    assert launcher["volumes"][0]["persistentVolumeClaim"]["claimName"] == "goodput-data"
    checked = dict(config)
    if importlib.util.find_spec("dagster_k8s") is None:  # the rest of the instance is still validated
        checked.pop("run_launcher")
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(checked))
    validated, _ = dagster_instance_config(str(tmp_path))
    assert validated["run_coordinator"]["config"]["max_concurrent_runs"] >= 1
    if "run_launcher" not in checked:
        pytest.skip("dagster-k8s is not installed (pip install 'goodput[k8s]'): its launcher config was not checked")
    from dagster._config import process_config
    from dagster_k8s import K8sRunLauncher

    result = process_config(K8sRunLauncher.config_type(), launcher)
    assert result.success, result.errors
    broken = process_config(K8sRunLauncher.config_type(), {**launcher, "volume_mount": []})
    assert not broken.success  # a misspelt key is caught, so the check above means something
