//! The prefix cache's LRU set of KV-block hashes ([`crate::engine`]).
//!
//! Semantics (what the engine's results depend on): every use of a block ("touch") makes it the
//! most recently used; eviction drops least recently used blocks first. The order is kept as a
//! last-use tick per block plus a queue of `(tick, hash)` in touch order: a touch is one map
//! write and one push (O(1)), and an entry whose tick is no longer its block's last use is stale,
//! skipped by eviction and dropped when the queue is compacted. This is the same order a
//! B-tree keyed by tick gives (each tick is used once), without its O(log n) insert and remove
//! per touch: an AgentX prompt of 40k tokens is 2,500 blocks of 16, touched on every admission
//! attempt and again when its prefill completes.
//!
//! Keys are already chain hashes (well mixed 64-bit values), so the map uses them as their own
//! hash instead of SipHash.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A [`Hasher`] for keys that are already uniformly distributed `u64` hashes: the key is the
/// hash. Other writes (not used by the cache) fold bytes in with FNV-1a so it stays a hasher.
#[derive(Default)]
pub(crate) struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Map keyed by block hashes, hashed by [`BlockHasher`].
pub(crate) type BlockMap<V> = HashMap<u64, V, BuildHasherDefault<BlockHasher>>;

/// LRU set of cached KV-block hashes.
#[derive(Default)]
pub(crate) struct PrefixCache {
    /// Block hash → tick of its last use.
    last_use: BlockMap<u64>,
    /// `(tick, hash)` in touch order; stale where `last_use[hash] != tick`.
    order: VecDeque<(u64, u64)>,
    /// Touches so far (the last one's tick). Unchanged ⇔ no block was used or added since.
    tick: u64,
}

impl PrefixCache {
    /// Blocks cached.
    pub(crate) fn len(&self) -> usize {
        self.last_use.len()
    }

    /// Touches so far: equal values mean no block was touched in between (only evictions,
    /// which drop the least recently used blocks and keep the others' order).
    pub(crate) fn touches(&self) -> u64 {
        self.tick
    }

    /// Whether `h` is cached (no touch).
    pub(crate) fn contains(&self, h: u64) -> bool {
        self.last_use.contains_key(&h)
    }

    /// Makes `h` the most recently used block, adding it if absent.
    pub(crate) fn touch(&mut self, h: u64) {
        self.tick += 1;
        self.last_use.insert(h, self.tick);
        self.push(h);
    }

    fn push(&mut self, h: u64) {
        self.order.push_back((self.tick, h));
        // stale entries at most as many as live ones (+ slack): amortised O(1) per touch
        if self.order.len() > 2 * self.last_use.len() + 1024 {
            let live = &self.last_use;
            self.order.retain(|(t, h)| live.get(h) == Some(t));
        }
    }

    /// Leading blocks of `hashes` that are cached; those are touched, in order.
    pub(crate) fn hit(&mut self, hashes: &[u64]) -> usize {
        let mut n = 0;
        for &h in hashes {
            let Some(t) = self.last_use.get_mut(&h) else {
                break;
            };
            self.tick += 1;
            *t = self.tick;
            self.push(h);
            n += 1;
        }
        n
    }

    /// Evicts least recently used blocks until at most `cap` remain; returns how many.
    pub(crate) fn evict_to(&mut self, cap: usize) -> u64 {
        let mut evicted = 0;
        while self.last_use.len() > cap {
            let Some((t, h)) = self.order.pop_front() else {
                break;
            };
            if self.last_use.get(&h) == Some(&t) {
                self.last_use.remove(&h);
                evicted += 1;
            }
        }
        evicted
    }

    /// Drops every block. Counts as a touch (a lookup made before is not valid after).
    pub(crate) fn clear(&mut self) {
        self.last_use.clear();
        self.order.clear();
        self.tick += 1;
    }
}

/// A waiting sequence's last prefix lookup ([`PrefixCache::hit`] on the GPU cache, then on the
/// DRAM tier for the blocks after the GPU hits), replayed without touching anything while it
/// is still exact.
///
/// A sequence at the head of the queue that does not fit in the free KV blocks is looked up
/// again every step until it does (hundreds of decode steps under KV pressure, each touching
/// its thousands of hit blocks). Right after a lookup its `n` hit blocks are the cache's `n`
/// most recently used, in its order; while no block has been touched since (only evictions,
/// which take the least recently used first and keep the others' order) and at least `n`
/// blocks remain, the same lookup finds the same `n` blocks and touching them again leaves the
/// order as it is. So the replay returns the same counts and the cache ends in the same order
/// as the full lookup would leave it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Probe {
    /// (GPU cache's touches after the lookup, blocks hit).
    gpu: Option<(u64, usize)>,
    /// (DRAM tier's touches after the lookup, GPU blocks hit before it, blocks hit).
    host: Option<(u64, usize, usize)>,
}

impl Probe {
    /// Blocks of `hashes` hit on the GPU (leading run) and then in the DRAM tier (`host`,
    /// the run after the GPU hits; 0 without one), touched as [`PrefixCache::hit`] does.
    pub(crate) fn lookup(
        &mut self,
        gpu: &mut PrefixCache,
        host: Option<&mut PrefixCache>,
        hashes: &[u64],
    ) -> (usize, usize) {
        let g = match self.gpu {
            Some((t, g)) if gpu.touches() == t && gpu.len() >= g => g,
            _ => {
                let g = gpu.hit(hashes);
                self.gpu = Some((gpu.touches(), g));
                g
            }
        };
        let h = match host {
            None => 0,
            Some(c) => match self.host {
                Some((t, g0, h)) if g0 == g && c.touches() == t && c.len() >= h => h,
                _ => {
                    let h = c.hit(&hashes[g..]);
                    self.host = Some((c.touches(), g, h));
                    h
                }
            },
        };
        (g, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The B-tree LRU this replaces (tick → hash), as the reference for the order.
    #[derive(Default)]
    struct Reference {
        last_use: HashMap<u64, u64>,
        by_age: BTreeMap<u64, u64>,
        tick: u64,
    }

    impl Reference {
        fn touch(&mut self, h: u64) {
            self.tick += 1;
            if let Some(old) = self.last_use.insert(h, self.tick) {
                self.by_age.remove(&old);
            }
            self.by_age.insert(self.tick, h);
        }
        fn hit(&mut self, hashes: &[u64]) -> usize {
            let n = hashes
                .iter()
                .take_while(|h| self.last_use.contains_key(h))
                .count();
            for &h in &hashes[..n] {
                self.touch(h);
            }
            n
        }
        fn evict_to(&mut self, cap: usize) -> Vec<u64> {
            let mut out = Vec::new();
            while self.last_use.len() > cap {
                let Some((_, h)) = self.by_age.pop_first() else {
                    break;
                };
                self.last_use.remove(&h);
                out.push(h);
            }
            out
        }
    }

    #[test]
    fn evicts_in_the_same_order_as_the_btree_lru() {
        // a deterministic mix of touches, chain hits and evictions over a small key space, so
        // blocks are re-touched often (stale queue entries, compaction)
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut fast = PrefixCache::default();
        let mut slow = Reference::default();
        let mut evicted_total = 0;
        for _ in 0..200_000 {
            match rnd(10) {
                0..=5 => {
                    let h = rnd(3_000);
                    fast.touch(h);
                    slow.touch(h);
                }
                6..=8 => {
                    let start = rnd(3_000);
                    let chain: Vec<u64> = (start..start + rnd(40)).collect();
                    assert_eq!(fast.hit(&chain), slow.hit(&chain));
                }
                _ => {
                    let cap = 500 + rnd(2_000) as usize;
                    let before: Vec<u64> = slow.last_use.keys().copied().collect();
                    let gone = slow.evict_to(cap);
                    assert_eq!(fast.evict_to(cap), gone.len() as u64);
                    evicted_total += gone.len();
                    for h in before {
                        assert_eq!(fast.contains(h), slow.last_use.contains_key(&h), "{h}");
                    }
                }
            }
            assert_eq!(fast.len(), slow.last_use.len());
        }
        assert!(evicted_total > 10_000, "the mix evicted {evicted_total}");
        assert!(fast.order.len() <= 2 * fast.len() + 1024 + 1);
    }

    #[test]
    fn a_replayed_probe_gives_the_counts_and_order_of_a_full_lookup() {
        // the engine's pattern: the queue head is looked up step after step while it does not
        // fit; between lookups other sequences' prefills touch blocks (sometimes) and the KV
        // budget evicts (often). Reference: a full B-tree lookup of GPU then DRAM tier each time.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let (mut gpu, mut host) = (PrefixCache::default(), PrefixCache::default());
        let (mut rgpu, mut rhost) = (Reference::default(), Reference::default());
        let mut head: Vec<u64> = (0..60).collect();
        let mut probe = Probe::default();
        let (mut replays, mut lookups) = (0, 0);
        for _ in 0..100_000 {
            match rnd(20) {
                0 => {
                    let start = rnd(400);
                    head = (start..start + 1 + rnd(80)).collect();
                    probe = Probe::default();
                }
                1..=2 => {
                    let start = rnd(400);
                    for h in start..start + rnd(30) {
                        gpu.touch(h);
                        rgpu.touch(h);
                        host.touch(h);
                        rhost.touch(h);
                    }
                    assert_eq!(host.evict_to(300), rhost.evict_to(300).len() as u64);
                }
                3..=9 => {
                    let cap = 40 + rnd(200) as usize;
                    let gone = rgpu.evict_to(cap);
                    assert_eq!(gpu.evict_to(cap), gone.len() as u64);
                    assert!(gone.iter().all(|&h| !gpu.contains(h)));
                }
                _ => {
                    let before = (gpu.touches(), host.touches());
                    let (g, h) = probe.lookup(&mut gpu, Some(&mut host), &head);
                    let rg = rgpu.hit(&head);
                    let rh = rhost.hit(&head[rg..]);
                    assert_eq!((g, h), (rg, rh));
                    lookups += 1;
                    if (gpu.touches(), host.touches()) == before && g + h > 0 {
                        replays += 1;
                    }
                }
            }
            assert_eq!(gpu.len(), rgpu.last_use.len());
            assert_eq!(host.len(), rhost.last_use.len());
        }
        for h in 0..500 {
            assert_eq!(gpu.contains(h), rgpu.last_use.contains_key(&h));
            assert_eq!(host.contains(h), rhost.last_use.contains_key(&h));
        }
        assert!(
            replays > 1_000 && replays < lookups,
            "{replays} of {lookups}"
        );
    }

    #[test]
    fn a_hit_touches_only_the_leading_cached_run() {
        let mut c = PrefixCache::default();
        for h in [1, 2, 3, 5] {
            c.touch(h);
        }
        let before = c.touches();
        assert_eq!(c.hit(&[1, 2, 4, 5]), 2);
        assert_eq!(c.touches(), before + 2);
        // 3 and 5 are now the least recently used
        assert_eq!(c.evict_to(2), 2);
        assert!(c.contains(1) && c.contains(2) && !c.contains(3) && !c.contains(5));
        c.clear();
        assert_eq!(c.len(), 0);
        assert!(c.touches() > before + 2);
    }
}
