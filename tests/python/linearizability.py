"""A linearizability checker for histories of one register (test_lwt_cluster.py uses it).

A history is a list of `Op`s, each with the time it was invoked (`call`) and the time its
answer came back (`ret`), for a register that holds `None` (no row) or a value:

- `read`: a SERIAL read; `out` is the value read.
- `cas`: `UPDATE … SET v = new IF v = expected` (`arg` is `(expected, new)`);
  `out` is `(applied, current)`: `current` is the value the answer showed when not applied
  (`None` for no row).
- `insert`: `INSERT … IF NOT EXISTS` (`arg` is the new value); `out` as for `cas`.
- `delete`: `DELETE … IF v = expected` (`arg` is the expected value); `out` as for `cas`.

An op whose request failed or timed out (`ret` is None) has an unknown outcome: it may have
taken effect at any moment after its invocation — even long after its client gave up, as a
Paxos proposal a later round finishes does — or never. A failed read has no effect and is
dropped.

`check` is the Wing–Gong / Lowe algorithm as Porcupine implements it: a depth-first search
over the history's calls and returns in time order that linearizes an op whose call comes
before the first return still pending, backtracks at a return whose op is not linearized
yet, and memoizes (set of linearized ops, state) so a state reached twice with the same ops
done is searched once. Unknown ops have no return, so they never force a backtrack; and
since one that leaves the state unchanged can be dropped from any linearization without
changing what anything else saw, they are linearized only where they change the state. The
history is linearizable when every op with a known outcome is linearized.
"""
from dataclasses import dataclass, field
import json
import itertools

KINDS = ("read", "cas", "insert", "delete")


@dataclass
class Op:
    kind: str
    arg: object
    call: float
    ret: float | None = None  # None: outcome unknown
    out: object = None
    client: int = 0
    error: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def known(self):
        return self.ret is not None

    def describe(self):
        who = f"c{self.client}"
        if self.kind == "read":
            what = "read"
        elif self.kind == "cas":
            what = f"cas({self.arg[0]}->{self.arg[1]})"
        elif self.kind == "insert":
            what = f"insert({self.arg})"
        else:
            what = f"delete(if {self.arg})"
        if not self.known:
            result = f"?? {self.error or 'unknown'}"
            ret = "        ∞"
        else:
            result = repr(self.out) if self.kind == "read" else \
                ("applied" if self.out[0] else f"not applied, current {self.out[1]!r}")
            ret = f"{self.ret:9.4f}"
        return f"[{self.call:9.4f} {ret}] {who:>4} {what:<22} -> {result}"

    def to_json(self):
        return {"kind": self.kind, "arg": self.arg, "call": self.call, "ret": self.ret, "out": self.out,
                "client": self.client, "error": self.error}


FAIL = object()


def step(state, op):
    """The register's state after `op` from `state`, or FAIL if `op` could not have answered
    what it did there (for an unknown op: FAIL unless it changes the state)."""
    kind = op.kind
    if not op.known:
        if kind == "cas":
            expected, new = op.arg
            return new if state == expected and state is not None and new != state else FAIL
        if kind == "insert":
            return op.arg if state is None else FAIL
        if kind == "delete":
            return None if state is not None and state == op.arg else FAIL
        return FAIL
    if kind == "read":
        return state if op.out == state else FAIL
    applied, current = op.out
    if kind == "cas":
        expected, new = op.arg
        if applied:
            return new if state is not None and state == expected else FAIL
        return state if (state is None or state != expected) and current == state else FAIL
    if kind == "insert":
        if applied:
            return op.arg if state is None else FAIL
        return state if state is not None and current == state else FAIL
    if kind == "delete":
        if applied:
            return None if state is not None and state == op.arg else FAIL
        return state if (state is None or state != op.arg) and current == state else FAIL
    raise ValueError(f"unknown op kind {kind!r}")


@dataclass
class Result:
    ok: bool
    inconclusive: bool = False
    steps: int = 0
    linearization: list = None  # when ok: op indices in linearization order
    best: list = None  # when not ok: the longest partial linearization found (op indices)
    best_state: object = None
    stuck: int = None  # an op whose return came with no linearization for it
    ops: list = None

    def explain(self, context=40):
        """Why the history is not linearizable, for a test's failure message."""
        if self.ok:
            return "linearizable"
        ops = self.ops
        lines = []
        if self.inconclusive:
            lines.append(f"INCONCLUSIVE: search gave up after {self.steps} steps")
        lines.append(f"longest linearizable prefix: {len(self.best)} ops, ending in state {self.best_state!r}; "
                     "its last ops:")
        lines += ["    " + ops[i].describe() for i in self.best[-12:]]
        if self.stuck is not None:
            s = ops[self.stuck]
            lines.append("no op left could be linearized before this one returned:")
            lines.append("    " + s.describe())
            done = set(self.best)
            pending = [i for i, op in enumerate(ops) if i not in done and op.known and op.call <= s.ret]
            lines.append(f"answered ops invoked by then and not in that prefix ({len(pending)}):")
            lines += ["    " + ops[i].describe() for i in pending[:context]]
            live = [i for i, op in enumerate(ops)
                    if i not in done and not op.known and op.call <= s.ret and step(self.best_state, op) is not FAIL]
            lines.append(f"ops of unknown outcome invoked by then that could still apply in state "
                         f"{self.best_state!r} ({len(live)}):")
            lines += ["    " + ops[i].describe() for i in live[:context]]
            # The history around it, in invocation order.
            order = sorted(range(len(ops)), key=lambda i: ops[i].call)
            at = order.index(self.stuck)
            lines.append(f"the history around it ({context} ops either side, by invocation):")
            for i in order[max(0, at - context):at + context]:
                mark = " >>" if i == self.stuck else "   "
                lines.append(mark + " " + ops[i].describe())
        return "\n".join(lines)


def check(ops, init=None, max_steps=5_000_000):
    """Whether the register history `ops` (from state `init`) is linearizable: a Result."""
    ops = [op for op in ops if op.known or op.kind != "read"]
    events = []
    for i, op in enumerate(ops):
        if op.known and op.ret < op.call:
            raise ValueError(f"op returns before it is invoked: {op}")
        events.append((op.call, 0, i))  # at equal times, calls first (the lenient order)
        if op.known:
            events.append((op.ret, 1, i))
    events.sort()
    # Doubly linked list of the events: node 0 is the head, node n+1 the tail.
    n = len(events)
    head, tail = 0, n + 1
    nxt = list(range(1, n + 3))
    prv = [-1] + list(range(0, n + 1))
    is_call = [False] * (n + 2)
    op_of = [-1] * (n + 2)
    ret_node = {}
    for node, (_, kind, i) in enumerate(events, start=1):
        is_call[node] = kind == 0
        op_of[node] = i
        if kind == 1:
            ret_node[i] = node

    def unlink(node):
        nxt[prv[node]] = nxt[node]
        prv[nxt[node]] = prv[node]

    def relink(node):
        nxt[prv[node]] = node
        prv[nxt[node]] = node

    remaining = sum(1 for op in ops if op.known)
    linearized = 0
    state = init
    seen = set()
    stack = []  # (call node, state before it)
    best, best_state, stuck = [], init, None
    best_known = -1
    known_done = 0
    steps = 0
    entry = nxt[head]
    while remaining:
        steps += 1
        if steps > max_steps:
            return Result(False, inconclusive=True, steps=steps, best=best, best_state=best_state, stuck=stuck,
                          ops=ops)
        if entry == tail:
            raise AssertionError("reached the end of the history with ops left to linearize")
        if is_call[entry]:
            i = op_of[entry]
            new = step(state, ops[i])
            if new is not FAIL:
                marked = linearized | (1 << i)
                key = (marked, new)
                if key not in seen:
                    seen.add(key)
                    stack.append((entry, state))
                    state, linearized = new, marked
                    unlink(entry)
                    if ops[i].known:
                        unlink(ret_node[i])
                        remaining -= 1
                        known_done += 1
                    entry = nxt[head]
                    continue
            entry = nxt[entry]
        else:
            # The op returning here is not linearized yet: undo the last choice.
            if known_done > best_known:
                best_known = known_done
                best = [op_of[node] for node, _ in stack]
                best_state = state
                stuck = op_of[entry]
            if not stack:
                return Result(False, steps=steps, best=best, best_state=best_state, stuck=stuck, ops=ops)
            entry, state = stack.pop()
            i = op_of[entry]
            linearized &= ~(1 << i)
            if ops[i].known:
                relink(ret_node[i])
                remaining += 1
                known_done -= 1
            relink(entry)
            entry = nxt[entry]
    return Result(True, steps=steps, linearization=[op_of[node] for node, _ in stack], ops=ops)


def check_brute_force(ops, init=None):
    """Whether `ops` is linearizable, by trying every order (and every subset of the unknown
    ops): for cross-checking `check` on small histories only."""
    ops = [op for op in ops if op.known or op.kind != "read"]
    known = [i for i, op in enumerate(ops) if op.known]
    unknown = [i for i, op in enumerate(ops) if not op.known]
    for r in range(len(unknown) + 1):
        for subset in itertools.combinations(unknown, r):
            chosen = known + list(subset)
            for order in itertools.permutations(chosen):
                if _valid_order(ops, order, init):
                    return True
    return False


def _valid_order(ops, order, init):
    # Real time: an op may not come after an op invoked after it returned.
    for a, b in itertools.combinations(order, 2):  # a before b in the order
        if ops[b].known and ops[b].ret < ops[a].call:
            return False
    state = init
    for i in order:
        op = ops[i]
        if op.known:
            new = step(state, op)
        else:
            # An unknown op, once taken, acts as its request says.
            new = step(state, Op(op.kind, op.arg, op.call, op.call, out=_effect_out(state, op)))
        if new is FAIL:
            return False
        state = new
    return True


def _effect_out(state, op):
    if op.kind == "cas":
        applied = state is not None and state == op.arg[0]
    elif op.kind == "insert":
        applied = state is None
    else:
        applied = state is not None and state == op.arg
    return (applied, None if applied else state)


def dump(ops, path):
    with open(path, "w") as f:
        json.dump([op.to_json() for op in ops], f, indent=0)
