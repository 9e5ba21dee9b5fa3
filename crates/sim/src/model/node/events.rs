//! The stages' events: a request arriving, entering a stage, taking a
//! permit or a worker, timing out, its work and its write done, a group
//! commit started and done, the timer thread waking, a request finished.
//! Owns what each event does to the pipeline's state; must not schedule
//! anything the pipeline does not (the parent's `run` pops the events).

use super::*;

impl Sim {
    #[inline]
    pub(super) fn depart(&mut self, s: usize, mark: u64) {
        let (now, t0) = (self.now, self.t0);
        let st = &mut self.stages[s].st;
        st.in_stage.add(now, t0, -1);
        if now >= t0 {
            st.departures += 1;
            st.residence_ns += (now - mark) as f64;
        }
    }

    pub(super) fn arrival(&mut self) {
        let ClientsRt::Open {
            mean_gap,
            poisson,
            max_in_flight,
        } = self.clients
        else {
            unreachable!()
        };
        let gap = if poisson {
            let e: f64 = rand_distr::Distribution::sample(&rand_distr::Exp1, &mut self.client_rng);
            e * mean_gap
        } else {
            mean_gap
        };
        // Constant arrivals keep fractional nanoseconds: the k-th arrival
        // is at round(k × gap), not k × round(gap).
        let next = if poisson {
            self.now + gap.round() as u64
        } else {
            let k = (self.now as f64 / mean_gap).round() + 1.0;
            ((k * mean_gap).round() as u64).max(self.now + 1)
        };
        self.q.push(next, Ev::new(EV_ARRIVAL, 0, 0));
        if self.reqs.live() as u32 >= max_in_flight {
            if self.in_window() {
                self.probes.arrivals_dropped += 1;
            }
            return;
        }
        self.start_request(NONE);
    }

    pub(super) fn start_request(&mut self, client: u32) {
        let write = self.write_fraction >= 1.0
            || (self.write_fraction > 0.0 && self.client_rng.unit() < self.write_fraction);
        let req = Req {
            start: self.now,
            mark: self.now,
            client,
            gen: 0,
            stage: 0,
            flags: if write { F_WRITE } else { 0 },
            tickets: [NONE; 2],
        };
        let r = match self.reqs.reuse() {
            Some(i) => {
                let gen = self.reqs[i].gen.wrapping_add(1);
                self.reqs[i] = Req { gen, ..req };
                i
            }
            None => self.reqs.alloc(req),
        };
        self.in_system.add(self.now, self.t0, 1);
        if self.in_window() {
            self.probes.request_start += 1;
            self.thread_start = Some(self.now);
        }
        self.enter(r, 0);
    }

    /// `r` has completed stage `s`: release what it held until there, and
    /// enter the next stage.
    #[inline]
    pub(super) fn advance(&mut self, r: u32, s: usize) {
        self.leave(r, s);
        self.enter(r, s + 1);
    }

    #[inline]
    pub(super) fn leave(&mut self, r: u32, s: usize) {
        for k in 0..2 {
            let t = self.reqs[r].tickets[k];
            if t != NONE && self.tickets[t].release_at as usize == s {
                self.reqs[r].tickets[k] = NONE;
                self.drop_share(t);
            }
        }
    }

    pub(super) fn add_queued(&mut self, tickets: [u32; 2], dt: u64) {
        for t in tickets {
            if t != NONE {
                self.tickets[t].queued += dt;
            }
        }
    }

    /// Enter stage `s` and go on through every stage that completes at once.
    pub(super) fn enter(&mut self, r: u32, mut s: usize) {
        let now = self.now;
        let t0 = self.t0;
        let win = now >= t0;
        loop {
            if s == self.stages.len() {
                self.finish(r);
                return;
            }
            self.reqs[r].stage = s as u16;
            let flags = self.reqs[r].flags;
            let stage = &mut self.stages[s];
            let visits = match stage.only {
                Only::All => true,
                Only::Writes => flags & F_WRITE != 0,
                Only::Reads => flags & F_WRITE == 0,
            };
            let failed = flags & F_FAILED != 0;
            if !visits || (failed && !matches!(stage.rt, Rt::Delay { .. })) {
                self.leave(r, s);
                s += 1;
                continue;
            }
            if win {
                stage.st.arrivals += 1;
            }
            match &mut stage.rt {
                Rt::Delay { d, tick, timer } => {
                    let t = now + d.sample(&mut stage.rng);
                    stage.st.in_stage.add(now, t0, 1);
                    self.reqs[r].mark = now;
                    let ev = Ev::new(EV_DELAY, 0, r);
                    sleep_until(&mut self.q, &mut self.timer, *timer, now, t, *tick, ev);
                    return;
                }
                Rt::Admission {
                    permits,
                    policy,
                    max_waiting,
                    max_wait,
                    release_at,
                    in_use,
                    waiting,
                    queue,
                } => {
                    if *in_use < *permits && *waiting == 0 {
                        *in_use += 1;
                        stage.st.busy.add(now, t0, 1);
                        if win {
                            stage.st.nonblock += 1;
                            stage.st.departures += 1;
                            self.probes.request_nonblock += 1;
                        }
                        let rel = *release_at;
                        self.grant(r, s, rel);
                        self.leave(r, s);
                        s += 1;
                        continue;
                    }
                    if *policy == Policy::Refuse || *waiting >= *max_waiting {
                        if win {
                            stage.st.refused += 1;
                            stage.st.departures += 1;
                            self.probes.request_refused += 1;
                        }
                        self.reqs[r].flags |= F_FAILED;
                        self.leave(r, s);
                        s += 1;
                        continue;
                    }
                    *waiting += 1;
                    queue.push_back((r, self.reqs[r].gen));
                    stage.st.queue.add(now, t0, 1);
                    stage.st.in_stage.add(now, t0, 1);
                    if win {
                        stage.st.block += 1;
                        self.probes.request_block += 1;
                    }
                    let req = &mut self.reqs[r];
                    req.flags |= F_WAITING;
                    req.mark = now;
                    if *max_wait > 0 {
                        self.q
                            .push(now + *max_wait, Ev::new(EV_TIMEOUT, req.gen, r));
                    }
                    return;
                }
                Rt::Workers {
                    servers,
                    d,
                    tick,
                    busy,
                    queue,
                    stalls,
                } => {
                    stage.st.in_stage.add(now, t0, 1);
                    self.reqs[r].mark = now;
                    if *busy < *servers {
                        *busy += 1;
                        stage.st.busy.add(now, t0, 1);
                        let x = serve_stalled(d, stalls, true, &mut stage.rng, &mut stage.st, win);
                        self.q
                            .push(round_up(now + x, *tick), Ev::new(EV_WORK, 0, r));
                    } else {
                        queue.push_back(r);
                        stage.st.queue.add(now, t0, 1);
                    }
                    return;
                }
                Rt::Store {
                    slots,
                    d,
                    tick,
                    timer,
                    sync,
                    fail,
                    parts,
                    busy,
                    queue,
                } => {
                    let sync = *sync;
                    if win {
                        self.probes.persist_start += 1;
                    }
                    if *fail && *busy + *parts as u32 > *slots {
                        // The store refuses: the write fails at once.
                        if win {
                            stage.st.failed += 1;
                            stage.st.departures += 1;
                            self.probes.persist_failed += 1;
                        }
                        if sync {
                            self.reqs[r].flags |= F_FAILED;
                        }
                        self.leave(r, s);
                        s += 1;
                        continue;
                    }
                    let tickets = if sync {
                        [NONE; 2]
                    } else {
                        self.reqs[r].tickets
                    };
                    let w = self.writes.alloc(Write {
                        start: now,
                        req: if sync { r } else { NONE },
                        stage: s as u16,
                        parts_left: *parts,
                        parts_unstarted: *parts,
                        tickets,
                    });
                    stage.st.in_stage.add(now, t0, 1);
                    // A write on the timer is a task spawned on another
                    // thread: it starts once that thread wakes.
                    let spawn = match (&mut self.timer, *timer) {
                        (Some(tm), true) => tm.wakeup(),
                        _ => 0,
                    };
                    let mut started = 0u16;
                    for _ in 0..*parts {
                        if *busy < *slots {
                            *busy += 1;
                            started += 1;
                            // On the timer, a part's service is measured when
                            // it ends (the slot's real hold).
                            let x = serve(d, &mut stage.rng, &mut stage.st, win && !*timer);
                            let ev = Ev::new(EV_PART, 0, w);
                            let t = now + spawn + x;
                            sleep_until(&mut self.q, &mut self.timer, *timer, now, t, *tick, ev);
                        } else {
                            queue.push_back(w);
                            stage.st.queue.add(now, t0, 1);
                        }
                    }
                    if started > 0 {
                        stage.st.busy.add(now, t0, started as i64);
                    }
                    self.writes[w].parts_unstarted -= started;
                    for t in tickets {
                        if t != NONE {
                            self.tickets[t].refs += 1;
                        }
                    }
                    if sync {
                        return;
                    }
                    self.leave(r, s);
                    s += 1;
                    continue;
                }
                Rt::Group {
                    sync, busy, queue, ..
                } => {
                    let sync = *sync;
                    let tickets = if sync {
                        [NONE; 2]
                    } else {
                        self.reqs[r].tickets
                    };
                    let w = self.writes.alloc(Write {
                        start: now,
                        req: if sync { r } else { NONE },
                        stage: s as u16,
                        parts_left: 1,
                        parts_unstarted: 1,
                        tickets,
                    });
                    if win {
                        self.probes.persist_start += 1;
                    }
                    queue.push_back(w);
                    stage.st.queue.add(now, t0, 1);
                    stage.st.in_stage.add(now, t0, 1);
                    let idle = !*busy;
                    for t in tickets {
                        if t != NONE {
                            self.tickets[t].refs += 1;
                        }
                    }
                    if idle {
                        self.start_group(s);
                    }
                    if sync {
                        return;
                    }
                    self.leave(r, s);
                    s += 1;
                    continue;
                }
            }
        }
    }

    /// Give `r` a permit of admission stage `s`.
    pub(super) fn grant(&mut self, r: u32, s: usize, release_at: u16) {
        let t = self.tickets.alloc(Ticket {
            refs: 1,
            stage: s as u16,
            release_at,
            acquired: self.now,
            queued: 0,
        });
        let req = &mut self.reqs[r];
        if req.tickets[0] == NONE {
            req.tickets[0] = t;
        } else {
            req.tickets[1] = t;
        }
    }

    /// One holder of ticket `t` is done with it; the last one frees the
    /// permit, which goes to the next waiter.
    pub(super) fn drop_share(&mut self, t: u32) {
        let tk = &mut self.tickets[t];
        tk.refs -= 1;
        if tk.refs > 0 {
            return;
        }
        let tk = *tk;
        self.tickets.release(t);
        let (now, t0) = (self.now, self.t0);
        let s = tk.stage as usize;
        let stage = &mut self.stages[s];
        if now >= t0 {
            let hold = now - tk.acquired;
            stage.st.hold_n += 1;
            stage.st.hold_ns += hold as f64;
            stage.st.hold_service_ns += hold.saturating_sub(tk.queued) as f64;
        }
        let Rt::Admission {
            policy,
            release_at,
            in_use,
            waiting,
            queue,
            ..
        } = &mut stage.rt
        else {
            unreachable!("a ticket of a stage that is not an admission")
        };
        // Hand the permit to the next live waiter.
        while *waiting > 0 {
            let (r, gen) = match policy {
                Policy::Lifo => queue.pop_back(),
                _ => queue.pop_front(),
            }
            .expect("waiters in the queue");
            let req = &mut self.reqs[r];
            if req.gen != gen || req.flags & F_WAITING == 0 {
                continue; // timed out earlier
            }
            req.flags &= !F_WAITING;
            let wait = now - req.mark;
            let other = req.tickets;
            *waiting -= 1;
            stage.st.queue.add(now, t0, -1);
            stage.st.in_stage.add(now, t0, -1);
            if now >= t0 {
                stage.st.wait_n += 1;
                stage.st.wait_ns += wait as f64;
                stage.st.departures += 1;
                stage.st.residence_ns += wait as f64;
            }
            let rel = *release_at;
            self.add_queued(other, wait);
            self.grant(r, s, rel);
            self.resume(r, s);
            return;
        }
        *in_use -= 1;
        stage.st.busy.add(now, t0, -1);
    }

    pub(super) fn timeout(&mut self, r: u32, gen: u32) {
        let req = self.reqs[r];
        if !same_gen(req.gen, gen) || req.flags & F_WAITING == 0 {
            return;
        }
        let s = req.stage as usize;
        let (now, t0) = (self.now, self.t0);
        let stage = &mut self.stages[s];
        let Rt::Admission {
            waiting, max_wait, ..
        } = &mut stage.rt
        else {
            return;
        };
        // A timeout left over from an earlier admission stage: not ours.
        if now != req.mark + *max_wait {
            return;
        }
        *waiting -= 1;
        stage.st.queue.add(now, t0, -1);
        stage.st.in_stage.add(now, t0, -1);
        if now >= t0 {
            stage.st.timeouts += 1;
            stage.st.wait_n += 1;
            stage.st.wait_ns += (now - req.mark) as f64;
            stage.st.departures += 1;
            stage.st.residence_ns += (now - req.mark) as f64;
            self.probes.request_timeout += 1;
        }
        let req = &mut self.reqs[r];
        req.flags = (req.flags & !F_WAITING) | F_FAILED;
        self.advance(r, s);
    }

    pub(super) fn work_done(&mut self, r: u32) {
        let s = self.reqs[r].stage as usize;
        let (now, t0) = (self.now, self.t0);
        let win = now >= t0;
        let stage = &mut self.stages[s];
        let Rt::Workers {
            d,
            tick,
            busy,
            queue,
            stalls,
            ..
        } = &mut stage.rt
        else {
            unreachable!()
        };
        if let Some(next) = queue.pop_front() {
            stage.st.queue.add(now, t0, -1);
            let x = serve_stalled(d, stalls, false, &mut stage.rng, &mut stage.st, win);
            self.q
                .push(round_up(now + x, *tick), Ev::new(EV_WORK, 0, next));
            let (waited, holders) = (now - self.reqs[next].mark, self.reqs[next].tickets);
            self.add_queued(holders, waited);
        } else {
            *busy -= 1;
            stage.st.busy.add(now, t0, -1);
        }
        let mark = self.reqs[r].mark;
        self.depart(s, mark);
        self.advance(r, s);
    }

    pub(super) fn part_done(&mut self, w: u32) {
        let s = self.writes[w].stage as usize;
        let (now, t0) = (self.now, self.t0);
        let win = now >= t0;
        let stage = &mut self.stages[s];
        let Rt::Store {
            d,
            tick,
            timer,
            busy,
            queue,
            ..
        } = &mut stage.rt
        else {
            unreachable!()
        };
        if let Some(next) = queue.pop_front() {
            stage.st.queue.add(now, t0, -1);
            let x = serve(d, &mut stage.rng, &mut stage.st, win && !*timer);
            let ev = Ev::new(EV_PART, 0, next);
            sleep_until(
                &mut self.q,
                &mut self.timer,
                *timer,
                now,
                now + x,
                *tick,
                ev,
            );
            let nw = &mut self.writes[next];
            nw.parts_unstarted -= 1;
            if nw.parts_unstarted == 0 {
                // The write's last part started: what it waited delays its holders.
                let waited = now - nw.start;
                let holders = if nw.req != NONE {
                    self.reqs[nw.req].tickets
                } else {
                    nw.tickets
                };
                self.add_queued(holders, waited);
            }
        } else {
            *busy -= 1;
            stage.st.busy.add(now, t0, -1);
        }
        let wr = &mut self.writes[w];
        wr.parts_left -= 1;
        if wr.parts_left == 0 {
            self.write_done(w);
        }
    }

    pub(super) fn start_group(&mut self, s: usize) {
        let (now, t0) = (self.now, self.t0);
        let win = now >= t0;
        let stage = &mut self.stages[s];
        let Rt::Group {
            max_batch,
            fsync,
            per_write,
            busy,
            queue,
            batch,
            ..
        } = &mut stage.rt
        else {
            unreachable!()
        };
        debug_assert!(batch.is_empty() && !*busy);
        let k = (*max_batch as usize).min(queue.len());
        if k == 0 {
            return;
        }
        batch.extend(queue.drain(..k));
        stage.st.queue.add(now, t0, -(k as i64));
        *busy = true;
        stage.st.busy.add(now, t0, 1);
        let mut x = fsync.sample(&mut stage.rng);
        if let Some(p) = per_write {
            for _ in 0..k {
                x += p.sample(&mut stage.rng);
            }
        }
        if win {
            stage.st.batches += 1;
            stage.st.batch_writes += k as u64;
            stage.st.service_n += 1;
            stage.st.service_ns += x as f64;
        }
        self.q.push(now + x, Ev::new(EV_GROUP, 0, s as u32));
        for i in 0..k {
            let Rt::Group { batch, .. } = &self.stages[s].rt else {
                unreachable!()
            };
            let w = batch[i];
            let wr = self.writes[w];
            let holders = if wr.req != NONE {
                self.reqs[wr.req].tickets
            } else {
                wr.tickets
            };
            self.add_queued(holders, now - wr.start);
        }
    }

    pub(super) fn group_done(&mut self, s: usize) {
        let (now, t0) = (self.now, self.t0);
        let stage = &mut self.stages[s];
        let Rt::Group { busy, batch, .. } = &mut stage.rt else {
            unreachable!()
        };
        *busy = false;
        stage.st.busy.add(now, t0, -1);
        let done = std::mem::take(batch);
        for &w in &done {
            self.write_done(w);
        }
        let Rt::Group { batch, .. } = &mut self.stages[s].rt else {
            unreachable!()
        };
        *batch = done;
        batch.clear();
        self.start_group(s);
    }

    pub(super) fn write_done(&mut self, w: u32) {
        let wr = self.writes[w];
        self.writes.release(w);
        let s = wr.stage as usize;
        self.depart(s, wr.start);
        if self.in_window() {
            self.probes.persist_done += 1;
            self.persist.record(self.now - wr.start);
        }
        for t in wr.tickets {
            if t != NONE {
                self.drop_share(t);
            }
        }
        if wr.req != NONE {
            if matches!(self.stages[s].rt, Rt::Store { timer: true, .. }) {
                self.resume(wr.req, s);
            } else {
                self.advance(wr.req, s);
            }
        }
    }

    /// `r` may leave stage `s` now (a permit or its write came from
    /// another thread): at once, or once the clients' thread wakes if the
    /// timer says woken threads take time to run.
    pub(super) fn resume(&mut self, r: u32, s: usize) {
        match self.timer.as_mut() {
            Some(tm) if tm.has_wakeup() => {
                let at = tm.clients_run_at(self.now);
                self.q.push(at, Ev::new(EV_RESUME, 0, r));
            }
            _ => self.ready.push((r, s as u16)),
        }
    }

    /// The timer thread wakes: a write's timer runs its task here and now
    /// (the write ends, its slot and permits are free); a client's runs
    /// on the clients' thread, which takes a wake-up. Then the thread
    /// parks for the next due tick.
    pub(super) fn timer_wake(&mut self, gen: u32) {
        let now = self.now;
        let Some(tm) = self.timer.as_mut() else {
            return;
        };
        if !tm.is_current(gen) {
            return; // superseded by an earlier wake
        }
        let mut fired = std::mem::take(&mut self.fired);
        tm.fire(now, &mut fired);
        for &(ev, since) in &fired {
            if ev.kind() == EV_PART {
                // The part held its slot from its registration (a spawned
                // task's wake-up included) to now: its service.
                if now >= self.t0 {
                    let s = self.writes[ev.index()].stage as usize;
                    let st = &mut self.stages[s].st;
                    st.service_n += 1;
                    st.service_ns += (now - since) as f64;
                }
                self.dispatch(ev);
                while let Some((r, s)) = self.ready.pop() {
                    self.advance(r, s as usize);
                }
            } else {
                let tm = self.timer.as_mut().expect("timer");
                let at = tm.clients_run_at(now);
                self.q.push(at, ev);
            }
        }
        fired.clear();
        self.fired = fired;
        let tm = self.timer.as_mut().expect("timer");
        if let Some((at, gen)) = tm.park(now) {
            self.q.push(at, Ev::new(EV_TIMER, gen, 0));
        }
    }

    pub(super) fn finish(&mut self, r: u32) {
        let req = self.reqs[r];
        for t in req.tickets {
            if t != NONE {
                self.drop_share(t);
            }
        }
        self.in_system.add(self.now, self.t0, -1);
        if self.in_window() {
            self.probes.request_done += 1;
            if req.flags & F_FAILED != 0 {
                self.probes.request_failed += 1;
            }
            self.lifetime.record(self.now - req.start);
            if let Some(t) = self.thread_start.take() {
                self.thread_lifetime.record(self.now - t);
            }
        }
        self.reqs.release(r);
        if let ClientsRt::Closed { think, tick, timer } = &self.clients {
            let t = self.now + think.sample(&mut self.client_rng);
            let ev = Ev::new(EV_WAKE, 0, req.client);
            sleep_until(&mut self.q, &mut self.timer, *timer, self.now, t, *tick, ev);
        }
    }
}
