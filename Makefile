# dyn_control on a machine without ROS 2: everything runs from a local venv.
#   make demo   closed-loop simulated arm (ARM=default_arm, two_link, dual_arm, two_arms (two arms,
#               one world, one ROS graph) or a URDF path;
#               MODE=cartesian or contact; TIP=link or JOINTS=j1,j2,... where the URDF has several limbs;
#               VIEW=1: a live 3D view in the browser, http://localhost:VIEW_PORT (8080), until Ctrl-C)
#   make test   the whole test suite (what CI runs)
#   make test-fast  the tests that start no processes and take under 10 s each, for iteration
#   make lint   ruff with the rules of ament_flake8 and ament_pep257 (make test and test-fast run it)
#   make soak   the 10-minute soak (make test runs a 1-minute one)
#   make sweep  every URDF of example-robot-data through make demo's path
#   make bench  dynamics against Pinocchio
#   make bench-loop  the real-time loop against an rclpy relay
#   make equality REV=rev  every public function's output here, bit for bit against REV's
#   make teach  teach mode on the simulated arm (ARM=): a simulated hand moves it, the recording is
#               played back through the controller's FollowJointTrajectory action
#   make identify ARM=<the URDF the controller knows> TRUTH=<the URDF the simulator runs>
#               identification on a simulated real arm (TRUTH defaults to ARM): out/identified_<arm>.urdf;
#               NOISE=position,velocity,effort adds the simulator's measurement noise (standard deviations)
# demo and test build a stand-in control_msgs into the venv once, about 30 s (the
# FollowJointTrajectory action; control_msgs is not on PyPI): test/standin_control_msgs.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# the suite on two workers (pytest-xdist): a test file runs whole in one worker, since each
# file's processes have their own ROS domain and its fixtures start them once; the tests
# marked `alone` run after, by themselves (test/conftest.py). PARALLEL= runs it in one process.
PARALLEL ?= -n 2 --dist loadfile
ARM ?= default_arm
TRUTH ?=
NOISE ?=
MODE ?=
VIEW ?=
VIEW_PORT ?= 8080
TIP ?=
JOINTS ?=

.PHONY: demo test test-fast lint soak sweep bench bench-loop equality identify teach venv venv-test clean
STANDIN := $(wildcard test/standin_control_msgs/*.txt test/standin_control_msgs/*.xml \
                      test/standin_control_msgs/msg/* test/standin_control_msgs/action/*)

# the package's C entry points (dyn_control/_calls.c) need a C compiler: one line if there is none
# the kernels are compiled here, into numba's cache, not at a node's first start (precompile.py)
$(VENV)/.runtime: requirements.txt setup.py dyn_control/_calls.c
	@command -v $${CC:-cc} > /dev/null || { echo "dyn_control's C entry points need a C" \
	  "compiler: '$${CC:-cc}' not found (Debian/Ubuntu: apt-get install build-essential;" \
	  "or set CC)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m dyn_control.precompile
	touch $@

$(VENV)/.test: $(VENV)/.runtime requirements-test.txt requirements-identify.txt requirements-view.txt
	$(PY) -m pip install -q -r requirements-test.txt
	touch $@

$(VENV)/.view: $(VENV)/.runtime requirements-view.txt
	$(PY) -m pip install -q -r requirements-view.txt
	touch $@

$(VENV)/.identify: $(VENV)/.runtime requirements-identify.txt
	$(PY) -m pip install -q -r requirements-identify.txt
	touch $@

$(VENV)/.control_msgs: $(VENV)/.runtime requirements-build.txt harness/build_control_msgs.sh $(STANDIN)
	$(PY) -m pip install -q -r requirements-build.txt
	harness/build_control_msgs.sh $(VENV)
	touch $@

venv: $(VENV)/.runtime
venv-test: $(VENV)/.test $(VENV)/.control_msgs

# A ROS domain of its own (77 unless set), so the demo does not talk to another graph here.
demo: $(VENV)/.runtime $(VENV)/.control_msgs $(if $(VIEW),$(VENV)/.view)
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-77} $(PY) -m harness.demo --arm $(ARM) --out out $(if $(MODE),--mode $(MODE)) \
	  $(if $(TIP),--tip $(TIP)) $(if $(JOINTS),--joints $(JOINTS)) $(if $(VIEW),--view-port $(VIEW_PORT))

test: $(VENV)/.test $(VENV)/.control_msgs lint
	DYN_CONTROL_REQUIRE_REFERENCES=1 $(PY) -m pytest -q $(PARALLEL) -m "not alone" test
	DYN_CONTROL_REQUIRE_REFERENCES=1 $(PY) -m pytest -q -m alone test

test-fast: $(VENV)/.test lint
	DYN_CONTROL_REQUIRE_REFERENCES=1 $(PY) -m pytest -q $(PARALLEL) -m "not processes and not slow" test

# the rules ament_flake8 and ament_pep257 check, at the house's width (ruff.toml)
lint: $(VENV)/.test
	$(VENV)/bin/ruff check --no-cache .

soak: $(VENV)/.test
	DYN_CONTROL_SOAK_SECONDS=600 $(PY) -m pytest -q -s test/test_soak.py

# every URDF of example-robot-data through make demo's path: which run (about 10 minutes)
sweep: $(VENV)/.test $(VENV)/.control_msgs
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-78} $(PY) -m harness.sweep

bench: $(VENV)/.test
	$(PY) bench/bench_dynamics.py

# the 1 kHz loop: our controller against a relay that does no work, then beside other loops
# in the same domain (about 7 minutes)
bench-loop: $(VENV)/.runtime
	$(PY) bench/bench_loop.py

# teach mode on the simulated arm: pushes move it, the recording is played back (harness/teach.py)
teach: $(VENV)/.runtime $(VENV)/.control_msgs
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-75} $(PY) -m harness.teach --arm $(ARM) --out out

# identification on a simulated real arm: the simulator runs TRUTH, the controller knows ARM
identify: $(VENV)/.identify $(VENV)/.control_msgs
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-76} $(PY) -m harness.identify --arm $(ARM) --out out \
	  $(if $(TRUTH),--truth $(TRUTH)) $(if $(NOISE),--noise $(NOISE))

# a restructuring keeps the numbers: every public output against REV's (default HEAD), np.array_equal
REV ?= HEAD
equality: $(VENV)/.test
	$(PY) bench/equality.py $(REV)

clean:
	rm -rf $(VENV) out build install log *.egg-info
