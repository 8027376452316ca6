//! A single-threaded task executor on a virtual microsecond clock.
//!
//! Owns every task of a simulated run (node tasks, message deliveries, clients, the fault
//! schedule) and the clock. Tasks wait in a run queue; the next one to poll is the front
//! of the queue, or — when the run's configuration asks for it — a seeded random pick, so
//! different seeds explore different interleavings of tasks that are runnable at the
//! same instant. Timers live in a heap ordered by (deadline, registration order); when no
//! task is runnable, the clock jumps to the earliest timer and wakes it. Nothing here
//! reads the wall clock, sleeps or starts a thread, so a run is a pure function of its seed.
//!
//! Every task belongs to an [`Owner`]: a node incarnation, or the world (clients, network,
//! faults). Crashing a node kills its incarnation's tasks: their futures are dropped and
//! never polled again, and a later spawn on a dead owner is dropped at once.
//!
//! The state is behind a mutex because `mosaic_cluster::Runtime` must be `Send + Sync`;
//! only one thread ever takes it. It is never held while a future is polled or dropped
//! (a dropped future may run destructors that take it again).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};

use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::prng::Prng;

/// Who a task belongs to: [`Owner::WORLD`] or a node incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner(pub u64);

impl Owner {
    /// Clients, the network and the fault schedule: never killed.
    pub const WORLD: Owner = Owner(0);
}

struct Task {
    owner: Owner,
    /// `None` while the task is being polled.
    future: Option<BoxFuture<'static, ()>>,
    queued: bool,
}

struct State {
    now_micros: u64,
    tasks: BTreeMap<u64, Task>,
    next_task: u64,
    queue: VecDeque<u64>,
    /// (deadline, timer id); an id whose waker is gone was cancelled.
    timers: BinaryHeap<Reverse<(u64, u64)>>,
    wakers: BTreeMap<u64, Waker>,
    next_timer: u64,
    dead: BTreeSet<Owner>,
    /// Picks the next task among the runnable ones when set.
    shuffle: Option<Prng>,
    polls: u64,
}

/// The executor (see the module doc). Shared as `Arc<Executor>`.
pub struct Executor {
    state: Mutex<State>,
    me: Weak<Executor>,
}

struct TaskWaker {
    task: u64,
    exec: Weak<Executor>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(exec) = self.exec.upgrade() {
            let mut s = exec.state.lock();
            let id = self.task;
            if let Some(t) = s.tasks.get_mut(&id) {
                if !t.queued {
                    t.queued = true;
                    s.queue.push_back(id);
                }
            }
        }
    }
}

impl Executor {
    /// An executor at virtual time 0; `shuffle` seeds random picks among runnable tasks.
    pub fn new(shuffle: Option<Prng>) -> Arc<Executor> {
        Arc::new_cyclic(|me| Executor {
            state: Mutex::new(State {
                now_micros: 0,
                tasks: BTreeMap::new(),
                next_task: 1,
                queue: VecDeque::new(),
                timers: BinaryHeap::new(),
                wakers: BTreeMap::new(),
                next_timer: 1,
                dead: BTreeSet::new(),
                shuffle,
                polls: 0,
            }),
            me: me.clone(),
        })
    }

    /// Virtual microseconds since the run began.
    pub fn now_micros(&self) -> u64 {
        self.state.lock().now_micros
    }

    /// Polls performed so far.
    pub fn polls(&self) -> u64 {
        self.state.lock().polls
    }

    /// Tasks alive.
    pub fn task_count(&self) -> usize {
        self.state.lock().tasks.len()
    }

    /// Runs `future` as a task of `owner` (dropped at once if `owner` was killed).
    pub fn spawn(&self, owner: Owner, future: BoxFuture<'static, ()>) {
        let mut s = self.state.lock();
        if s.dead.contains(&owner) {
            drop(s);
            drop(future);
            return;
        }
        let id = s.next_task;
        s.next_task += 1;
        s.tasks.insert(
            id,
            Task {
                owner,
                future: Some(future),
                queued: true,
            },
        );
        s.queue.push_back(id);
    }

    /// Kills every task of `owner`, now and for good.
    pub fn kill(&self, owner: Owner) {
        assert_ne!(owner, Owner::WORLD, "the world's tasks are never killed");
        let doomed: Vec<Option<BoxFuture<'static, ()>>> = {
            let mut s = self.state.lock();
            s.dead.insert(owner);
            let ids: Vec<u64> = s
                .tasks
                .iter()
                .filter(|(_, t)| t.owner == owner)
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| s.tasks.remove(&id))
                .map(|t| t.future)
                .collect()
        };
        // Dropped without the lock: their destructors (timers, response slots) take it.
        drop(doomed);
    }

    /// Drops every task (the end of a run: tasks hold the nodes that hold the executor).
    pub fn clear(&self) {
        let all: Vec<Task> = {
            let mut s = self.state.lock();
            s.queue.clear();
            std::mem::take(&mut s.tasks).into_values().collect()
        };
        drop(all);
    }

    /// A future resolving `micros` from now.
    pub fn sleep(&self, micros: u64) -> Sleep {
        let deadline = self.now_micros().saturating_add(micros);
        Sleep {
            exec: self.me.clone(),
            deadline,
            timer: None,
        }
    }

    /// Polls one runnable task; false if none was runnable.
    pub fn step(&self) -> bool {
        let (id, mut future) = {
            let mut guard = self.state.lock();
            let s = &mut *guard;
            let picked = match s.shuffle.as_mut() {
                Some(rng) if s.queue.len() > 1 => {
                    let i = rng.index(s.queue.len());
                    s.queue.remove(i)
                }
                _ => s.queue.pop_front(),
            };
            let Some(id) = picked else {
                return false;
            };
            s.polls += 1;
            let Some(task) = s.tasks.get_mut(&id) else {
                // Killed after it was queued.
                return true;
            };
            task.queued = false;
            let Some(future) = task.future.take() else {
                return true;
            };
            (id, future)
        };
        let waker = Waker::from(Arc::new(TaskWaker {
            task: id,
            exec: self.me.clone(),
        }));
        let done = future
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready();
        let mut s = self.state.lock();
        if done {
            s.tasks.remove(&id);
            drop(s);
            drop(future);
        } else if let Some(task) = s.tasks.get_mut(&id) {
            task.future = Some(future);
        } else {
            // Its owner was killed while it ran.
            drop(s);
            drop(future);
        }
        true
    }

    /// Moves the clock to the earliest pending timer if it is due by `until_micros`, and
    /// wakes every timer due then; false if no timer is due by then (the clock then
    /// stands at `until_micros` if it was earlier).
    pub fn advance(&self, until_micros: u64) -> bool {
        let wakers: Vec<Waker> = {
            let mut s = self.state.lock();
            // Skip cancelled timers.
            while let Some(Reverse((_, id))) = s.timers.peek() {
                if s.wakers.contains_key(id) {
                    break;
                }
                s.timers.pop();
            }
            let Some(Reverse((deadline, _))) = s.timers.peek().copied() else {
                s.now_micros = s.now_micros.max(until_micros);
                return false;
            };
            if deadline > until_micros {
                s.now_micros = s.now_micros.max(until_micros);
                return false;
            }
            s.now_micros = s.now_micros.max(deadline);
            let mut due = Vec::new();
            while let Some(Reverse((d, id))) = s.timers.peek().copied() {
                if d > s.now_micros {
                    break;
                }
                s.timers.pop();
                if let Some(w) = s.wakers.remove(&id) {
                    due.push(w);
                }
            }
            due
        };
        for w in wakers {
            w.wake();
        }
        true
    }

    /// Runs tasks and timers until `done()` holds, the clock passes `until_micros`, or
    /// `polls_max` polls were spent; returns whether `done()` held.
    pub fn run_until(&self, until_micros: u64, polls_max: u64, done: impl Fn() -> bool) -> bool {
        // `done` is asked once per virtual instant, after everything runnable then ran.
        loop {
            if done() {
                return true;
            }
            while self.step() {
                if self.polls() >= polls_max {
                    return false;
                }
            }
            if done() {
                return true;
            }
            if !self.advance(until_micros) {
                return false;
            }
        }
    }
}

/// A timer (see [`Executor::sleep`]).
pub struct Sleep {
    exec: Weak<Executor>,
    deadline: u64,
    timer: Option<u64>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(exec) = self.exec.upgrade() else {
            // The run is over; nothing will ever wake this.
            return Poll::Pending;
        };
        let mut s = exec.state.lock();
        if s.now_micros >= self.deadline {
            if let Some(id) = self.timer.take() {
                s.wakers.remove(&id);
            }
            return Poll::Ready(());
        }
        let id = match self.timer {
            Some(id) => id,
            None => {
                let id = s.next_timer;
                s.next_timer += 1;
                let deadline = self.deadline;
                s.timers.push(Reverse((deadline, id)));
                id
            }
        };
        s.wakers.insert(id, cx.waker().clone());
        drop(s);
        self.timer = Some(id);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let (Some(id), Some(exec)) = (self.timer, self.exec.upgrade()) {
            exec.state.lock().wakers.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn timers_fire_in_virtual_time_order_and_killed_tasks_stop() {
        let exec = Executor::new(None);
        let log = Arc::new(Mutex::new(Vec::new()));
        for (owner, ms) in [(1, 30u64), (2, 10), (1, 20)] {
            let e = exec.clone();
            let l = log.clone();
            exec.spawn(
                Owner(owner),
                async move {
                    e.sleep(ms * 1000).await;
                    l.lock().push((ms, e.now_micros()));
                }
                .boxed(),
            );
        }
        assert!(exec.run_until(15_000, 1000, || log.lock().len() == 1));
        assert_eq!(*log.lock(), vec![(10, 10_000)]);
        exec.kill(Owner(1));
        assert_eq!(exec.task_count(), 0);
        assert!(!exec.run_until(100_000, 1000, || log.lock().len() > 1));
        assert_eq!(exec.now_micros(), 100_000);
        // A dead owner's new tasks never run.
        let l = log.clone();
        exec.spawn(Owner(1), async move { l.lock().push((0, 0)) }.boxed());
        assert!(!exec.step());
        assert_eq!(log.lock().len(), 1);
    }
}
