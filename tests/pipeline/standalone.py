"""Real Spark standalone clusters started with spark-class from the pyspark package and always torn
down: a master and a worker on loopback; a master and a worker in a network namespace of its own
(another host as far as Spark can tell), whose Python holds neither the project nor its
dependencies; a master with no worker.  The JVMs of the tests (these clusters, the drivers they
start) share one class-data sharing archive per test run (:func:`start_class_archive`)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent.parent
SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT = 90.0
#: the JVMs of the clusters (master, worker, and through the worker's JAVA_TOOL_OPTIONS its executors):
#: the first compiler tier and one GC thread; a test's job lasts seconds, the optimising compiler costs more
DAEMON_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: the run's class-data sharing archive of Spark's classes, in the folder :func:`start_class_archive` is given
CLASS_ARCHIVE = "spark-classes.jsa"
#: written beside it once its making has ended (made or not): the JVMs that wait for it wait no longer
ARCHIVE_SETTLED = "spark-classes.settled"


def class_sharing(archive: Path) -> str:
    """The JVM options that map the classes of ``archive`` (JDK 13+ dynamic class-data sharing)
    instead of loading and verifying them, which saves about a third of the CPU a JVM spends
    starting Spark.  The archive may not be there (yet): a JVM then loads its classes as usual,
    and says nothing of it (``-Xlog:cds`` off), so nothing a test reads changes."""
    return f"-XX:SharedArchiveFile={archive} -Xlog:cds=off,cds+dynamic=off"


def jvm_options(archive: Path) -> str:
    """:data:`DAEMON_JVM` and :func:`class_sharing`: the options of the tests' Spark JVMs."""
    return f"{DAEMON_JVM} {class_sharing(archive)}"


#: a small local job whose JVM loads the classes a pipeline's driver and executors load
_ARCHIVE_JOB = """
import sys
from harness.pipeline.cli import main
from harness.pipeline.synth import synthesize

synthesize(sys.argv[1] + "/c.pcap", 4, 0.5, seed=1)
sys.exit(main([sys.argv[1] + "/c.pcap", "--out", sys.argv[1] + "/out", "--master", "local[1]", "--quiet"]))
"""


def kept_archive() -> Path | None:
    """Where a made class archive is kept for the next test runs: a private folder of the
    user's in the temporary folder (as the suite's bytecode, tests/conftest.py), one file per
    Java, pyspark and set of Spark jars (the JVM checks the archive against its class path too,
    and maps nothing of one that does not match); None if that folder is not the user's alone."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows
        return None
    top = Path(tempfile.gettempdir()) / f"msmq-harness-{os.getuid()}"
    try:
        top.mkdir(mode=0o700, exist_ok=True)
        st = top.stat()
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    java = Path(shutil.which("java") or "java").resolve()
    jars = sorted(p.name for p in (SPARK_HOME / "jars").iterdir())
    made_by = [str(java), str(java.stat().st_mtime_ns if java.exists() else 0), pyspark.__version__,
               str(SPARK_HOME), *jars]
    return top / f"spark-classes-{hashlib.sha256(chr(0).join(made_by).encode()).hexdigest()[:16]}.jsa"


def start_class_archive(folder: Path, keep: Path | None = None) -> subprocess.Popen[bytes]:
    """Start making ``folder/CLASS_ARCHIVE`` in the background: a small pipeline job under
    spark-submit whose JVM writes the classes it loaded when it exits
    (``-XX:ArchiveClassesAtExit``), into a partial file renamed into place once complete.  The
    class path is the one every Spark JVM of the tests has (pyspark's ``conf`` and ``jars``), as
    the archive requires.  :data:`ARCHIVE_SETTLED` is written beside it when the job has ended,
    whether it made the archive or not; a made archive is also linked as ``keep``
    (:func:`kept_archive`).  Returns the process (its group is the caller's to wait for)."""
    folder.mkdir(parents=True, exist_ok=True)
    partial, archive = folder / (CLASS_ARCHIVE + ".partial"), folder / CLASS_ARCHIVE
    (folder / "job.py").write_text(_ARCHIVE_JOB)
    env = spark_env(folder)
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("JAVA_TOOL_OPTIONS", None)
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[1]",
              "--driver-java-options", f"{DAEMON_JVM} -XX:ArchiveClassesAtExit={partial}",
              str(folder / "job.py"), str(folder)]
    made = f"mv -f {shlex.quote(str(partial))} {shlex.quote(str(archive))}"
    if keep is not None:  # linked beside it, then renamed into place: never a partial file there
        linked = shlex.quote(f"{keep}.{os.getpid()}")
        made += f" && ln -f {shlex.quote(str(archive))} {linked} && mv -f {linked} {shlex.quote(str(keep))}"
    script = f"{shlex.join(submit)} && {made}; : > {shlex.quote(str(folder / ARCHIVE_SETTLED))}"
    with (folder / "archive.log").open("wb") as out:
        return subprocess.Popen(["sh", "-c", script], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=str(folder))


def spark_env(work: Path, jvm: str = DAEMON_JVM) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(work / "local"),
        SPARK_WORKER_DIR=str(work / "worker"),
        SPARK_LOG_DIR=str(work / "logs"),
        SPARK_DAEMON_MEMORY="384m",
        SPARK_DAEMON_JAVA_OPTS=jvm,
        SPARK_NO_DAEMONIZE="1",
    )
    return env


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], deadline: float) -> re.Match[str]:
    rx = re.compile(pattern)
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        m = rx.search(text)
        if m:
            return m
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"no {pattern!r} in {log} within {START_TIMEOUT} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@contextmanager
def standalone_cluster(work: Path, cores: int = 2, memory: str = "1g", jvm: str = DAEMON_JVM) -> Iterator[str]:
    """Yield the master URL (spark://127.0.0.1:PORT) of a running master with one registered worker
    (their JVMs and the executors' with the options ``jvm``)."""
    work.mkdir(parents=True, exist_ok=True)
    env = spark_env(work, jvm)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        deadline = time.monotonic() + START_TIMEOUT
        master_log = work / "master.log"
        with master_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.master.Master",
                     "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                )
            )
        url = _wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", procs[0], deadline).group(1)
        worker_log = work / "worker.log"
        with worker_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", url,
                     "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                     "--cores", str(cores), "--memory", memory, "--work-dir", str(work / "worker")],
                    stdout=out, stderr=subprocess.STDOUT, env={**env, "JAVA_TOOL_OPTIONS": jvm},
                    start_new_session=True,
                )
            )
        _wait_for(worker_log, r"Successfully registered with master", procs[1], deadline)
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)


# ---------------------------------------------------------------------------------------------
# A worker on another host: a network namespace of its own


#: the base interpreter of the virtual environment (its site-packages hold neither the project nor
#: its dependencies): the workers' Python
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)
_LOCK = Path(tempfile.gettempdir()) / "msmq-harness-netns.lock"


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if proc.returncode:
        raise RuntimeError(
            f"ip {' '.join(args)}: {proc.stderr.strip()} (the multi-host test needs root and network namespaces: "
            "ip netns add)"
        )


def _free_subnet() -> int:
    """X of a 10.231.X.0/24 no interface of this machine is in."""
    used = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, timeout=30).stdout
    for x in range(1, 255):
        if f" 10.231.{x}." not in used:
            return x
    raise RuntimeError("no free 10.231.X.0/24 subnet for the test's network namespace")


@dataclass
class RemoteCluster:
    url: str  # spark://10.231.X.1:PORT
    driver_host: str  # the host side of the link: where the workers reach the driver
    worker_host: str  # the namespace's address
    work: Path  # the worker's work folder (one app-*/N/stderr per executor)
    python: str  # the workers' Python
    env: dict[str, str]  # the worker's environment


def _worker_env(work: Path, host: str, jvm: str) -> dict[str, str]:
    """A worker's environment: Java and a plain Python on PATH, no project, no virtual environment."""
    java = shutil.which("java") or "/usr/bin/java"
    dirs = [str(Path(java).resolve().parent), str(Path(BASE_PYTHON).parent), "/usr/bin", "/bin"]
    path = os.pathsep.join(dict.fromkeys(dirs))
    return {
        "PATH": path,
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": host,
        "SPARK_LOCAL_DIRS": str(work / "local"),
        "SPARK_WORKER_DIR": str(work / "worker"),
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_DAEMON_MEMORY": "384m",
        "JAVA_TOOL_OPTIONS": jvm,
        "SPARK_NO_DAEMONIZE": "1",
    }


@contextmanager
def netns_cluster(
    work: Path, cores: int = 2, memory: str = "1g", jvm: str = DAEMON_JVM
) -> Iterator[RemoteCluster]:
    """A standalone master on the host side of a veth pair (10.231.X.1) and one worker inside a
    network namespace of its own (10.231.X.2), whose Python holds neither the project nor its
    dependencies.  The namespace, its link and every process are removed on the way out."""
    work.mkdir(parents=True, exist_ok=True)
    tag = str(os.getpid())  # interface names: at most 15 characters
    ns, host_if, ns_if = f"msmqh{tag}", f"msmqh{tag}a", f"msmqh{tag}b"
    procs: list[subprocess.Popen[bytes]] = []
    made = False
    try:
        with _LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _remove_abandoned()
            x = _free_subnet()
            driver, worker = f"10.231.{x}.1", f"10.231.{x}.2"
            _ip("netns", "add", ns)
            made = True
            _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
            _ip("link", "set", ns_if, "netns", ns)
            _ip("addr", "add", f"{driver}/24", "dev", host_if)
            _ip("link", "set", host_if, "up")
            _ip("netns", "exec", ns, "ip", "addr", "add", f"{worker}/24", "dev", ns_if)
            _ip("netns", "exec", ns, "ip", "link", "set", ns_if, "up")
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            _ip("netns", "exec", ns, "ip", "route", "add", "default", "via", driver)
        deadline = time.monotonic() + START_TIMEOUT
        env = spark_env(work / "master", jvm)
        env["SPARK_LOCAL_IP"] = driver
        master_log = work / "master.log"
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        with master_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.master.Master",
                     "--host", driver, "--port", "0", "--webui-port", "0"],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                )
            )
        started = rf"Starting Spark master at (spark://{re.escape(driver)}:\d+)"
        url = _wait_for(master_log, started, procs[0], deadline).group(1)
        wenv = _worker_env(work / "worker-home", worker, jvm)
        (work / "worker-home").mkdir(exist_ok=True)
        worker_log = work / "worker.log"
        with worker_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns, spark_class, "org.apache.spark.deploy.worker.Worker", url,
                     "--host", worker, "--port", "0", "--webui-port", "0", "--cores", str(cores),
                     "--memory", memory, "--work-dir", str(work / "worker")],
                    stdout=out, stderr=subprocess.STDOUT, env=wenv, start_new_session=True, cwd=str(work),
                )
            )
        _wait_for(worker_log, r"Successfully registered with master", procs[1], deadline)
        yield RemoteCluster(url, driver, worker, work / "worker", BASE_PYTHON, wenv)
    finally:
        for proc in reversed(procs):
            _stop(proc)
        if made:
            _kill_namespace(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", host_if], capture_output=True, timeout=30)  # gone with the namespace


def _remove_abandoned() -> None:
    """Namespaces of this fixture whose test process is gone (killed before it could remove them)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout.split("\n")
    for line in listed:
        name = line.split(" ", 1)[0]
        pid = name[len("msmqh") :]
        if name.startswith("msmqh") and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _kill_namespace(name)
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
            subprocess.run(["ip", "link", "del", f"{name}a"], capture_output=True, timeout=30)


def _kill_namespace(ns: str) -> None:
    """Every process still in the namespace (the worker's executors and their Python workers)."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


@contextmanager
def master_only(work: Path, jvm: str = DAEMON_JVM) -> Iterator[str]:
    """A standalone master on loopback with no worker."""
    work.mkdir(parents=True, exist_ok=True)
    env = spark_env(work, jvm)
    proc = None
    try:
        log = work / "master.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                 "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        started = r"Starting Spark master at (spark://127\.0\.0\.1:\d+)"
        yield _wait_for(log, started, proc, time.monotonic() + START_TIMEOUT).group(1)
    finally:
        if proc is not None:
            _stop(proc)
