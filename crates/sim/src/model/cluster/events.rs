//! The cluster's events: a client's request, its arrival at the
//! coordinator, admission, timeouts, CPU jobs, the fan-out to replicas
//! and the network hops, replies and answers, the WAL's groups. Owns what
//! each event does to the run's state; must not decide when events happen
//! (the parent's loop pops them).

use super::*;

impl ClusterSim {
    pub(super) fn new_request(&mut self, client: u32) {
        if let ClientsRt::Open { max_in_flight, .. } = self.clients {
            if self.in_system >= max_in_flight as u64 {
                if self.win() {
                    self.dropped += 1;
                }
                return;
            }
        }
        let write = self.write_fraction >= 1.0
            || (self.write_fraction > 0.0 && self.client_rng.unit() < self.write_fraction);
        let coord = if self.coord_cum.len() == 1 {
            0
        } else {
            let total = *self.coord_cum.last().expect("a live node");
            let x = self.client_rng.unit() * total;
            self.coord_cum
                .partition_point(|&c| c <= x)
                .min(self.live - 1)
        };
        self.gen = self.gen.wrapping_add(1);
        let r = self.reqs.alloc(Req {
            start: self.now,
            mark: self.now,
            client,
            gen: self.gen,
            coord: coord as u16,
            flags: if write { F_WRITE } else { 0 },
            got: 0,
            outstanding: 0,
        });
        self.in_system += 1;
        if self.win() {
            self.started += 1;
        }
        if self.cost[R_CLIENT][0].is_some() {
            self.job(R_CLIENT, write, coord as u16, r);
        } else {
            self.after_client(r);
        }
    }

    pub(super) fn after_client(&mut self, r: u32) {
        match &self.client_hop {
            Some(h) => {
                let d = h.sample(&mut self.hop_rng);
                self.q.push(self.now + d, Ev::new(EV_HOP_IN, 0, r));
            }
            None => self.at_coordinator(r),
        }
    }

    pub(super) fn at_coordinator(&mut self, r: u32) {
        let node = self.reqs[r].coord as usize;
        let win = self.win();
        if win {
            self.nodes[node].st.coordinated += 1;
        }
        let Some((permits, max_waiting, max_wait)) = self.permits else {
            self.admitted(r);
            return;
        };
        let nd = &mut self.nodes[node];
        if nd.in_use < permits {
            nd.in_use += 1;
            self.reqs[r].flags |= F_PERMIT;
            self.admitted(r);
        } else if nd.waiting >= max_waiting {
            if win {
                nd.st.refused += 1;
                self.refused += 1;
            }
            self.reqs[r].flags |= F_FAILED;
            self.answer(r);
        } else {
            nd.waiting += 1;
            nd.adm_q.push_back((r, self.reqs[r].gen));
            if win {
                nd.st.waited += 1;
            }
            let req = &mut self.reqs[r];
            req.flags |= F_WAITING;
            req.mark = self.now;
            if max_wait > 0 {
                self.q
                    .push(self.now + max_wait, Ev::new(EV_TIMEOUT, req.gen, r));
            }
        }
    }

    pub(super) fn admitted(&mut self, r: u32) {
        let req = self.reqs[r];
        if self.win() {
            self.admitted += 1;
            self.nodes[req.coord as usize].st.admitted += 1;
        }
        self.job(R_REQUEST, req.flags & F_WRITE != 0, req.coord, r);
    }

    pub(super) fn timeout(&mut self, r: u32, gen: u32) {
        let req = self.reqs[r];
        if !same_gen(req.gen, gen) || req.flags & F_WAITING == 0 {
            return;
        }
        let node = req.coord as usize;
        let win = self.win();
        let nd = &mut self.nodes[node];
        nd.waiting -= 1;
        if win {
            nd.st.timeouts += 1;
            nd.st.wait_ns += (self.now - req.mark) as f64;
            self.refused += 1;
        }
        let req = &mut self.reqs[r];
        req.flags = (req.flags & !F_WAITING) | F_FAILED;
        self.answer(r);
    }

    /// Hand node `node`'s permit to its next live waiter, or free it.
    pub(super) fn release_permit(&mut self, node: usize) {
        let win = self.win();
        loop {
            let Some((w, gen)) = self.nodes[node].adm_q.pop_front() else {
                self.nodes[node].in_use -= 1;
                return;
            };
            let req = &mut self.reqs[w];
            if req.gen != gen || req.flags & F_WAITING == 0 {
                continue; // timed out earlier
            }
            req.flags = (req.flags & !F_WAITING) | F_PERMIT;
            let waited = self.now - req.mark;
            let nd = &mut self.nodes[node];
            nd.waiting -= 1;
            if win {
                nd.st.wait_ns += waited as f64;
            }
            self.admitted(w);
            return;
        }
    }

    /// Queue a CPU job of `role` on `node`'s CPU.
    pub(super) fn job(&mut self, role: usize, write: bool, node: u16, id: u32) {
        if self.win() {
            self.nodes[node as usize].st.jobs[role][write as usize] += 1;
        }
        let j = self.jobs.alloc(Job {
            role: role as u8,
            write,
            node,
            id,
            created: self.now,
        });
        let p = if self.host { 0 } else { node as usize };
        let pool = &mut self.pools[p];
        if pool.busy < pool.servers {
            pool.busy += 1;
            self.start_job(p, j);
        } else {
            pool.queue.push_back(j);
        }
    }

    pub(super) fn start_job(&mut self, p: usize, j: u32) {
        let job = self.jobs[j];
        let node = job.node as usize;
        let s = self.cost[job.role as usize][job.write as usize]
            .as_ref()
            .expect("a job of a role with a cost");
        let x = s.sample(&mut self.nodes[node].rng);
        if self.now >= self.t0 {
            self.nodes[node].st.cpu_ns[job.role as usize] += x as f64;
            let ps = &mut self.pool_st[p];
            ps.busy_ns += x as f64;
            ps.jobs += 1;
            ps.wait_ns += (self.now - job.created) as f64;
        }
        self.q.push(self.now + x, Ev::new(EV_CPU, 0, j));
    }

    pub(super) fn job_done(&mut self, j: u32) {
        let job = self.jobs[j];
        self.jobs.release(j);
        let p = if self.host { 0 } else { job.node as usize };
        match self.pools[p].queue.pop_front() {
            Some(next) => self.start_job(p, next),
            None => self.pools[p].busy -= 1,
        }
        match job.role as usize {
            R_CLIENT => self.after_client(job.id),
            R_REQUEST => self.fan_out(job.id),
            R_SEND => {
                let d = self.hop.sample(&mut self.hop_rng);
                self.q.push(self.now + d, Ev::new(EV_TO_REPLICA, 0, job.id));
            }
            R_REPLICA | R_LOCAL => {
                let o = self.ops[job.id];
                if o.write && self.wal.is_some() {
                    self.wal_enqueue(o.node as usize, job.id);
                } else {
                    self.replied(job.id);
                }
            }
            _ => unreachable!("unknown role"),
        }
    }

    /// An operation's work is done at its replica: the reply goes back.
    pub(super) fn replied(&mut self, o: u32) {
        if self.ops[o].local {
            self.op_answered(o);
        } else {
            let d = self.hop.sample(&mut self.hop_rng);
            self.q.push(self.now + d, Ev::new(EV_TO_COORD, 0, o));
        }
    }

    /// The coordinator has planned request `r`: pick its replicas, send.
    pub(super) fn fan_out(&mut self, r: u32) {
        let req = self.reqs[r];
        // `from` distinct nodes, uniformly (rendezvous hashing over random
        // keys): a partial Fisher-Yates shuffle.
        let n = self.n;
        for i in 0..self.from {
            let k = i + (self.place_rng.bits() % (n - i) as u64) as usize;
            self.scratch.swap(i, k);
        }
        let live = self.scratch[..self.from]
            .iter()
            .filter(|&&m| (m as usize) < self.live)
            .count();
        if live < self.ack as usize {
            // The failure detector knows ack is out of reach: 504 at once.
            if self.win() {
                self.not_enough += 1;
            }
            self.reqs[r].flags |= F_FAILED;
            self.answer(r);
            return;
        }
        let write = req.flags & F_WRITE != 0;
        let win = self.win();
        for i in 0..self.from {
            let m = self.scratch[i];
            if m as usize >= self.live {
                continue;
            }
            let local = m == req.coord;
            let o = self.ops.alloc(Op {
                req: r,
                node: m,
                local,
                write,
            });
            self.reqs[r].outstanding += 1;
            if local {
                if win {
                    self.nodes[m as usize].st.local_ops += 1;
                }
                self.job(R_LOCAL, write, m, o);
            } else {
                if win {
                    self.nodes[m as usize].st.replica_ops += 1;
                }
                if self.cost[R_SEND][write as usize].is_some() {
                    self.job(R_SEND, write, req.coord, o);
                } else {
                    let d = self.hop.sample(&mut self.hop_rng);
                    self.q.push(self.now + d, Ev::new(EV_TO_REPLICA, 0, o));
                }
            }
        }
    }

    pub(super) fn op_answered(&mut self, o: u32) {
        let r = self.ops[o].req;
        self.ops.release(o);
        let req = &mut self.reqs[r];
        req.outstanding -= 1;
        if req.flags & F_ANSWERED == 0 {
            req.got += 1;
            if req.got >= self.ack {
                // The answer frees the request once it is out (and this
                // was its last operation): not here as well.
                self.answer(r);
                return;
            }
        }
        self.maybe_free(r);
    }

    /// The coordinator answers (ok at the ack-th reply, or a failure).
    pub(super) fn answer(&mut self, r: u32) {
        let req = &mut self.reqs[r];
        req.flags |= F_ANSWERED;
        let coord = req.coord as usize;
        if req.flags & F_PERMIT != 0 {
            req.flags &= !F_PERMIT;
            self.release_permit(coord);
        }
        match &self.client_hop {
            Some(h) => {
                let d = h.sample(&mut self.hop_rng);
                self.q.push(self.now + d, Ev::new(EV_HOP_OUT, 0, r));
            }
            None => self.out(r),
        }
    }

    /// The answer reached the client.
    pub(super) fn out(&mut self, r: u32) {
        let req = &mut self.reqs[r];
        req.flags |= F_OUT;
        let (start, client) = (req.start, req.client);
        self.in_system -= 1;
        if self.now >= self.t0 {
            self.done += 1;
            self.lifetime.record(self.now - start);
        }
        if let ClientsRt::Closed { think } = &self.clients {
            let t = self.now + think.sample(&mut self.client_rng);
            self.q.push(t, Ev::new(EV_WAKE, 0, client));
        }
        self.maybe_free(r);
    }

    pub(super) fn maybe_free(&mut self, r: u32) {
        let req = &mut self.reqs[r];
        if req.flags & F_OUT != 0 && req.outstanding == 0 {
            debug_assert!(req.flags & F_FREED == 0, "request {r} freed twice");
            req.flags |= F_FREED;
            self.reqs.release(r);
        }
    }

    pub(super) fn wal_enqueue(&mut self, node: usize, o: u32) {
        let win = self.win();
        let nd = &mut self.nodes[node];
        nd.wal_q.push_back(o);
        if win {
            nd.st.wal_writes += 1;
        }
        if !nd.wal_busy {
            self.start_group(node);
        }
    }

    pub(super) fn start_group(&mut self, node: usize) {
        let wal = self.wal.as_ref().expect("a WAL");
        let nd = &mut self.nodes[node];
        if nd.wal_busy || nd.wal_q.is_empty() {
            return;
        }
        if wal.shared && self.disk_busy {
            if !nd.in_disk_q {
                nd.in_disk_q = true;
                self.disk_q.push_back(node as u16);
            }
            return;
        }
        let k = (wal.max_batch as usize).min(nd.wal_q.len());
        nd.batch.extend(nd.wal_q.drain(..k));
        nd.wal_busy = true;
        if wal.shared {
            self.disk_busy = true;
        }
        let mut x = wal.fsync.sample(&mut nd.wal_rng);
        if let Some(p) = &wal.per_write {
            for _ in 0..k {
                x += p.sample(&mut nd.wal_rng);
            }
        }
        if self.now >= self.t0 {
            nd.st.wal_groups += 1;
            nd.st.wal_busy_ns += x as f64;
        }
        self.q.push(self.now + x, Ev::new(EV_GROUP, 0, node as u32));
    }

    pub(super) fn group_done(&mut self, node: usize) {
        let batch = std::mem::take(&mut self.nodes[node].batch);
        self.nodes[node].wal_busy = false;
        for &o in &batch {
            self.replied(o);
        }
        let mut batch = batch;
        batch.clear();
        self.nodes[node].batch = batch;
        let shared = self.wal.as_ref().is_some_and(|w| w.shared);
        if shared {
            self.disk_busy = false;
            let nd = &mut self.nodes[node];
            if !nd.wal_q.is_empty() && !nd.in_disk_q {
                nd.in_disk_q = true;
                self.disk_q.push_back(node as u16);
            }
            if let Some(next) = self.disk_q.pop_front() {
                self.nodes[next as usize].in_disk_q = false;
                self.start_group(next as usize);
            }
        } else {
            self.start_group(node);
        }
    }
}
