//! The in-memory store against the plain rule: every record's last use, expiry and order of
//! use kept in a list, each decision read by scanning it all.

use proptest::prelude::*;

use super::{MemorySessionStore, SessionRecord, SessionStore, StoreError};
use crate::store::tests::block_on;

/// One record as the plain rule keeps it.
#[derive(Debug, Clone)]
struct Plain {
    id: String,
    last_seen: u64,
    expires_at: u64,
    /// When it was last used, in the order of all the store's operations.
    used: u64,
}

#[derive(Debug, Default)]
struct Model {
    records: Vec<Plain>,
    tick: u64,
}

impl Model {
    fn tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.records.iter().position(|r| r.id == id)
    }

    fn expired(&mut self, now: u64, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
        let mut gone: Vec<&Plain> = self
            .records
            .iter()
            .filter(|r| now >= r.expires_at && !keep(&r.id))
            .collect();
        gone.sort_by_key(|r| (r.expires_at, r.used));
        let ids: Vec<String> = gone.iter().map(|r| r.id.clone()).collect();
        self.records.retain(|r| !ids.contains(&r.id));
        ids
    }

    fn create(
        &mut self,
        id: &str,
        now: u64,
        idle: u64,
        cap: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, StoreError> {
        let tick = self.tick();
        if self.find(id).is_some() {
            return Err(StoreError::Exists);
        }
        let mut evicted = Vec::new();
        if self.records.len() >= cap {
            evicted = self.expired(now, keep);
        }
        if self.records.len() >= cap {
            let victim = self
                .records
                .iter()
                .filter(|r| !keep(&r.id))
                .min_by_key(|r| (r.last_seen, r.used))
                .map(|r| r.id.clone())
                .ok_or(StoreError::Full)?;
            self.records.retain(|r| r.id != victim);
            evicted.push(victim);
        }
        self.records.push(Plain {
            id: id.to_owned(),
            last_seen: now,
            expires_at: now + idle,
            used: tick,
        });
        Ok(evicted)
    }

    fn touch(&mut self, id: &str, now: u64, idle: u64) -> Option<u64> {
        let tick = self.tick();
        let i = self.find(id)?;
        if now >= self.records[i].expires_at {
            self.records.remove(i);
            return None;
        }
        let r = &mut self.records[i];
        r.last_seen = r.last_seen.max(now);
        r.expires_at = r.last_seen + idle;
        r.used = tick;
        Some(r.expires_at)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Create {
        id: u8,
        dt: u64,
        cap: usize,
        keep: u8,
    },
    Touch {
        id: u8,
        dt: u64,
    },
    Delete {
        id: u8,
    },
    Expire {
        dt: u64,
        keep: u8,
    },
    Load {
        id: u8,
        dt: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    // Ids from a small set, so that operations meet the same records; time steps from 0
    // (the same millisecond) to past the idle timeout.
    let id = 0u8..6;
    let dt = prop_oneof![Just(0u64), 0u64..50, 0u64..250];
    prop_oneof![
        1 => (id.clone(), dt.clone(), 1usize..5, any::<u8>())
            .prop_map(|(id, dt, cap, keep)| Op::Create { id, dt, cap, keep }),
        3 => (id.clone(), dt.clone()).prop_map(|(id, dt)| Op::Touch { id, dt }),
        1 => (id.clone()).prop_map(|id| Op::Delete { id }),
        1 => (dt.clone(), any::<u8>()).prop_map(|(dt, keep)| Op::Expire { dt, keep }),
        1 => (id, dt).prop_map(|(id, dt)| Op::Load { id, dt }),
    ]
}

/// `keep` as a set of ids: bit `i` keeps record `i`.
fn kept(bits: u8) -> impl Fn(&str) -> bool {
    move |id: &str| {
        id.parse::<u8>()
            .is_ok_and(|i| i < 8 && bits & (1 << i) != 0)
    }
}

const IDLE: u64 = 200;

proptest! {
    #[test]
    fn the_store_decides_as_the_plain_rule_does(ops in prop::collection::vec(op(), 1..120)) {
        let store = MemorySessionStore::new();
        let mut model = Model::default();
        let mut now = 1_000u64;
        for op in ops {
            match op {
                Op::Create { id, dt, cap, keep } => {
                    now += dt;
                    let keep = kept(keep);
                    let id = id.to_string();
                    let got = block_on(store.create(SessionRecord::new(&id, "2025-11-25", now, IDLE), cap, now, &keep));
                    let want = model.create(&id, now, IDLE, cap, &keep);
                    prop_assert_eq!(got.map(|c| c.evicted), want, "create {} at {}", id, now);
                }
                Op::Touch { id, dt } => {
                    now += dt;
                    let id = id.to_string();
                    let got = block_on(store.touch(&id, now));
                    prop_assert_eq!(got, Ok(model.touch(&id, now, IDLE)), "touch {} at {}", id, now);
                }
                Op::Delete { id } => {
                    let id = id.to_string();
                    let want = model.find(&id).map(|i| model.records.remove(i)).is_some();
                    prop_assert_eq!(block_on(store.delete(&id)), Ok(want));
                }
                Op::Expire { dt, keep } => {
                    now += dt;
                    let keep = kept(keep);
                    let got = block_on(store.expire(now, &keep));
                    prop_assert_eq!(got, Ok(model.expired(now, &keep)), "expire at {}", now);
                }
                Op::Load { id, dt } => {
                    now += dt;
                    let id = id.to_string();
                    let got = block_on(store.load(&id, now)).map(|r| r.map(|r| (r.last_seen, r.expires_at)));
                    let want = model
                        .find(&id)
                        .map(|i| &model.records[i])
                        .filter(|r| now < r.expires_at)
                        .map(|r| (r.last_seen, r.expires_at));
                    prop_assert_eq!(got, Ok(want), "load {} at {}", id, now);
                }
            }
            prop_assert_eq!(block_on(store.count()), Ok(model.records.len()));
        }
    }
}

/// A walk that ends on its bound stops there: the last tick there is, kept by `keep`, is
/// the bound of an expiry walk (`BTreeMap::range` panics on a start past its end).
#[test]
fn a_walk_that_ends_on_its_bound_stops() {
    let store = MemorySessionStore::new();
    store.lock().tick = u64::MAX - 1;
    let now = 1_000;
    let created = block_on(store.create(
        SessionRecord::new("a", "2025-11-25", now, 0),
        4,
        now,
        &|_| false,
    ));
    assert!(created.is_ok());
    assert_eq!(block_on(store.expire(now, &|_| true)), Ok(Vec::new()));
    assert_eq!(
        block_on(store.expire(now, &|_| false)),
        Ok(vec!["a".to_owned()])
    );
}
