#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
#
# run_spin.py: checks the library's park/wake handshakes exhaustively with
# the SPIN model checker, and checks that the check can fail.
#
# Each model in this folder is a Promela rendering of one handshake, step
# by step as the C++ does it (the model's header comment names the code,
# the bug class and the memory-model assumptions). For every model the
# faithful version must verify with no error, and every mutation -- the
# same model with one deliberate defect, selected with -DMUT_<name> -- must
# make SPIN report an error. A mutation that verifies means the model (or
# its property) has stopped covering what it claims to.
#
#   executor_park.pml    basic_executor's worker park vs. a thread placing
#                        work on the immediate list (executor.hpp: park,
#                        run_worker, request_workers, wake_one, wake_tree,
#                        process_list::take). Rules out the lost wake-up:
#                        work queued while every worker sleeps for good.
#                        Assertion at SPIN's timeout (nothing can move):
#                        the list is empty and every item was drained.
#   executor_rings.pml   activation rings published with a plain store
#                        while workers park behind membarrier
#                        (detail/producer_rings.hpp, executor.hpp park).
#                        The producer's ring store sits in a store buffer
#                        that the parker's membarrier drains. Rules out an
#                        activation left in a ring while every worker
#                        parks. Same assertion; checked in asymmetric
#                        (membarrier) and symmetric (exchange) mode.
#   semaphore_wait.pml   basic_semaphore host waiters (park_until,
#                        poll_parked) vs. reach / fail (begin_wake under
#                        the lock, end_wake, then the callbacks) vs. the
#                        destructor's wait on notifying_, run by the owner
#                        after its wait or (-DCALLBACK_DESTROYS) by a
#                        timepoint callback on the signalling thread. Rules
#                        out the lost wake-up (invalid end state: a thread
#                        that never returns) and use after free (an
#                        assertion on every access the signaller makes
#                        after the destructor returned).
#   queue_sleep.pml      basic_queue_process: go_to_sleep vs. drop() (the
#                        sleeping_ Dekker pair, the suspend count and
#                        run_listed's epilogue) and wait_idle vs. the drain
#                        advancing head_. Rules out a queue asleep with a
#                        ready operation, a double wake (suspend count below
#                        zero), and wait_idle sleeping after the last
#                        operation completed. The drainer's release stores
#                        of head_ sit in a store buffer, as the CPU may keep
#                        them past a later load; the drain reads
#                        idle_waiters_ with a seq_cst RMW, which drains it.
#
# How a case runs: in a temporary directory, `spin -D... -a model.pml`
# writes pan.c; the system C compiler builds it with -DSAFETY (the
# properties are assertions and end states, no LTL); ./pan searches the
# whole state space and prints "errors: N". A faithful case passes with
# N = 0 and a complete search; a mutation passes with N > 0, and its
# first error (and, with --trail, SPIN's replay of the trail) is shown.
#
# Exit status: 0 when every case came out as expected, 1 otherwise, 77
# (Meson: skipped) when spin or a C compiler is not installed.
#
# Usage: run_spin.py [--models DIR] [--only TEXT] [--trail] [--keep]

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

SKIPPED = 77


@dataclass
class Case:
    model: str                # file name without .pml
    name: str                 # "faithful", or the mutation's macro
    defines: list             # -D arguments for spin
    expect_error: bool        # True for a mutation
    cc_flags: list = field(default_factory=list)
    # -w20: a hash table of 2^20 slots (8 MB) is plenty below ~1M states.
    pan_flags: list = field(default_factory=lambda: ['-w20'])
    note: str = ''


def faithful(model, note, defines=(), **kw):
    return Case(model, 'faithful' if not defines else 'faithful ' + ' '.join(defines),
                list(defines), False, note=note, **kw)


def mutation(model, macro, extra=(), **kw):
    return Case(model, macro, list(extra) + ['-D' + macro], True, **kw)


# executor_park has a few million states: -DCOLLAPSE (state compression)
# keeps it near 200 MB.
BIG = dict(cc_flags=['-DCOLLAPSE'], pan_flags=['-w22'])

CASES = [
    faithful('executor_park', 'seq_cst Dekker pair', **BIG),
    mutation('executor_park', 'MUT_NO_RECHECK', **BIG),
    mutation('executor_park', 'MUT_SEEN_LATE', **BIG),
    mutation('executor_park', 'MUT_MASK_FIRST', **BIG),

    faithful('executor_rings', 'asymmetric: membarrier'),
    faithful('executor_rings', 'symmetric: exchange', ['-DSYMMETRIC']),
    mutation('executor_rings', 'MUT_NO_MEMBARRIER'),
    mutation('executor_rings', 'MUT_BARRIER_BEFORE_ANNOUNCE'),
    mutation('executor_rings', 'MUT_NO_RING_RECHECK'),
    mutation('executor_rings', 'MUT_NO_RING_RECHECK', ['-DSYMMETRIC']),

    faithful('semaphore_wait', 'seq_cst Dekker pair, notifying_'),
    mutation('semaphore_wait', 'MUT_NO_PARKED_RECHECK'),
    mutation('semaphore_wait', 'MUT_SEEN_LATE'),
    mutation('semaphore_wait', 'MUT_BEGIN_WAKE_UNLOCKED'),
    mutation('semaphore_wait', 'MUT_NOTIFYING_EARLY'),
    mutation('semaphore_wait', 'MUT_DTOR_NO_WAIT'),
    faithful('semaphore_wait', 'a timepoint callback destroys it', ['-DCALLBACK_DESTROYS']),
    mutation('semaphore_wait', 'MUT_FIRE_BEFORE_END_WAKE', ['-DCALLBACK_DESTROYS']),

    faithful('queue_sleep', 'release head_ stores, an RMW reads idle_waiters_'),
    mutation('queue_sleep', 'MUT_SLEEP_NO_RECHECK'),
    mutation('queue_sleep', 'MUT_SLEEP_FLAG_LATE'),
    mutation('queue_sleep', 'MUT_DROP_NOT_EXCHANGE'),
    mutation('queue_sleep', 'MUT_IDLE_SEEN_LATE'),
    mutation('queue_sleep', 'MUT_IDLE_PLAIN_LOAD'),
]

# pan's search depth bound; every model here stays far below it.
DEPTH = '-m100000'
STEP_TIMEOUT = 240  # per command; Meson's limit for the whole test is 300


@dataclass
class Outcome:
    ok: bool
    summary: str
    seconds: float
    detail: str = ''


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=STEP_TIMEOUT)


def replay(spin, case, workdir):
    """SPIN's replay of the trail pan left behind, one line per step."""
    r = run([spin, *case.defines, '-t', '-p', '-g', case.model + '.pml'], workdir)
    return r.stdout


def check(case, models, spin, cc, want_trail, keep):
    source = os.path.join(models, case.model + '.pml')
    workdir = tempfile.mkdtemp(prefix='spin-' + case.model + '-')
    started = time.monotonic()
    try:
        shutil.copy(source, workdir)
        r = run([spin, *case.defines, '-a', case.model + '.pml'], workdir)
        if r.returncode != 0 or not os.path.exists(os.path.join(workdir, 'pan.c')):
            return Outcome(False, 'spin -a failed', time.monotonic() - started, r.stdout)
        r = run([*cc, '-O2', '-DSAFETY', *case.cc_flags, '-o', 'pan', 'pan.c'], workdir)
        if r.returncode != 0:
            return Outcome(False, 'compiling pan.c failed', time.monotonic() - started, r.stdout)
        r = run(['./pan', DEPTH, *case.pan_flags], workdir)
        out = r.stdout
        seconds = time.monotonic() - started
        found = re.search(r'errors:\s*(\d+)', out)
        if found is None:
            return Outcome(False, 'pan printed no error count (exit %d)' % r.returncode, seconds, out)
        errors = int(found.group(1))
        stored = re.search(r'(\d+) states, stored', out)
        states = '%s states' % stored.group(1) if stored else 'states: ?'
        truncated = 'max search depth too small' in out or 'out of memory' in out.lower()
        if errors == 0:
            if truncated:
                return Outcome(False, '0 errors, but the search was incomplete', seconds, out)
            if case.expect_error:
                return Outcome(False, 'verified with 0 errors, but this mutation must fail (%s)'
                               % states, seconds, out)
            return Outcome(True, '0 errors, %s' % states, seconds)
        first = re.search(r'^pan:1: (.*)$', out, re.MULTILINE)
        what = first.group(1).strip() if first else 'error'
        trail = replay(spin, case, workdir) if (want_trail or not case.expect_error) else ''
        steps = re.search(r'trail ends after (\d+) steps', trail)
        if steps:
            what += ', trail of %s steps' % steps.group(1)
        if case.expect_error:
            return Outcome(True, '%d error: %s' % (errors, what), seconds, trail)
        return Outcome(False, '%d error(s): %s' % (errors, what), seconds, trail or out)
    except subprocess.TimeoutExpired as e:
        return Outcome(False, 'timed out after %d s: %s' % (STEP_TIMEOUT, ' '.join(e.cmd)),
                       time.monotonic() - started)
    finally:
        if keep:
            print('    (kept %s)' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0] if __doc__ else None)
    parser.add_argument('--models', default=os.path.dirname(os.path.abspath(__file__)),
                        help='folder holding the .pml models (default: this script\'s)')
    parser.add_argument('--only', default='',
                        help='run only cases whose "model name" contains this text')
    parser.add_argument('--trail', action='store_true',
                        help='print SPIN\'s replay of every error trail, mutations included')
    parser.add_argument('--keep', action='store_true',
                        help='keep each case\'s working directory (pan.c, pan, the trail)')
    args = parser.parse_args()

    spin = os.environ.get('SPIN') or shutil.which('spin')
    if spin is None:
        print('spin_models: SKIPPED: the SPIN model checker is not installed '
              '(Debian package `spin`)')
        return SKIPPED
    cc = shlex.split(os.environ.get('CC', ''))
    if not cc:
        found = shutil.which('cc') or shutil.which('gcc') or shutil.which('clang')
        cc = [found] if found else []
    if not cc:
        print('spin_models: SKIPPED: no C compiler to build pan with')
        return SKIPPED
    version = run([spin, '-V'], os.getcwd()).stdout.strip()
    print('spin_models: %s; pan built with %s' % (version, ' '.join(cc)))

    cases = [c for c in CASES if args.only in '%s %s' % (c.model, c.name)]
    failed = []
    total = time.monotonic()
    for case in cases:
        kind = 'mutation' if case.expect_error else 'faithful'
        label = case.name if case.expect_error else case.note
        extra = [d for d in case.defines if case.expect_error and d != '-D' + case.name]
        if extra:
            label += ' (on ' + ' '.join(extra) + ')'
        result = check(case, args.models, spin, cc, args.trail, args.keep)
        verdict = 'ok  ' if result.ok else 'FAIL'
        print('%s %-15s %-8s %-52s %6.2f s  %s' % (verdict, case.model, kind, label,
                                                 result.seconds, result.summary))
        sys.stdout.flush()
        if result.detail and (not result.ok or args.trail):
            print(result.detail)
        if not result.ok:
            failed.append(case)
    print('spin_models: %d cases in %.1f s: %d as expected, %d not'
          % (len(cases), time.monotonic() - total, len(cases) - len(failed), len(failed)))
    for case in failed:
        print('  not as expected: %s %s' % (case.model, case.name))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
