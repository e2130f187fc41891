//! LHD (Beckmann et al., "LHD: Improving Cache Hit Rate by Maximizing Hit
//! Density", NSDI 2018) as cache_ext's policy runs it
//! (policies/cache_ext_lhd.bpf.c): the hit-density model, apart from the
//! list plumbing so it can be tested on its own. Own code from the policy's
//! behaviour; names follow the policy's.
//!
//! Every folio has a class (its app id and the log of its last two hit
//! ages) and an age (requests since its last access, coarsened by a
//! shift). Each class keeps EWMA-decayed hit and eviction counts by age;
//! every `REQS_PER_RECONFIG` events (adds and accesses) the counts decay
//! and each (class, age) gets a hit density: hits still to come over the
//! lifetime still to come, summed from the oldest age down. Eviction takes
//! the sampled folio of lowest density. In cache_ext the reconfiguration is
//! a syscall program the loader runs when the policy posts a ring-buffer
//! event, shortly after; here it runs at the event (deterministic).

use std::collections::HashMap;

pub const HIT_AGE_CLASSES: usize = 16;
pub const APP_CLASSES: usize = 16;
pub const NUM_CLASSES: usize = HIT_AGE_CLASSES * APP_CLASSES;
pub const INITIAL_AGE_COARSENING_SHIFT: u64 = 10;
pub const REQS_PER_RECONFIG: u64 = 1 << 20;
pub const MAX_AGE: usize = 1 << 14;
pub const DEFAULT_APP_ID: u32 = 1;
pub const HIT_SCALING_FACTOR: u64 = 1 << 20;
pub const HIT_DENSITY_SCALING_FACTOR: u64 = 1 << 20;
pub const NUM_OBJECTS_SCALING_FACTOR: u64 = 1 << 20;
pub const TOTAL_EVENTS_THRESH: u64 = HIT_SCALING_FACTOR / 100_000;
pub const AGE_COARSENING_ERROR_TOLERANCE: u64 = 100;

#[derive(Clone, Copy, Debug)]
struct Meta {
    last_access_time: u64,
    last_hit_age: u64,
    last_last_hit_age: u64,
    app: u32,
}

struct Class {
    hits: Box<[u64]>,
    evictions: Box<[u64]>,
    hit_densities: Box<[u64]>,
}

pub struct Lhd {
    classes: Vec<Class>,
    meta: HashMap<u64, Meta>,
    timestamp: u64,
    next_reconfiguration: u64,
    reqs_per_reconfig: u64,
    pub num_reconfigurations: u32,
    age_coarsening_shift: u64,
    ewma_num_objects: u64,
    ewma_num_objects_mass: u64,
    ewma_victim_hit_density: u64,
    num_objects: u64,
    pub overflows: u64,
}

fn ewma_decay(v: u64) -> u64 {
    v * 9 / 10
}

fn hit_age_to_class(mut hit_age: u64) -> usize {
    if hit_age == 0 {
        return 0;
    }
    // About log2(MAX_AGE / hit_age), capped at the last class.
    let mut class = 0;
    while hit_age < MAX_AGE as u64 && class < HIT_AGE_CLASSES - 1 {
        hit_age <<= 1;
        class += 1;
    }
    class
}

impl Lhd {
    /// `capacity`: folios expected at once (the metadata table is sized
    /// for them up front, as the BPF hash map is preallocated).
    pub fn new(capacity: usize, reqs_per_reconfig: u64) -> Self {
        let classes = (0..NUM_CLASSES)
            .map(|i| Class {
                hits: vec![0; MAX_AGE].into(),
                evictions: vec![0; MAX_AGE].into(),
                // GDSF-like start: denser for higher classes and younger ages.
                hit_densities: (0..MAX_AGE)
                    .map(|j| HIT_DENSITY_SCALING_FACTOR * (i as u64 + 1) / (j as u64 + 1))
                    .collect(),
            })
            .collect();
        Lhd {
            classes,
            meta: HashMap::with_capacity(capacity),
            timestamp: 0,
            next_reconfiguration: reqs_per_reconfig.max(1),
            reqs_per_reconfig: reqs_per_reconfig.max(1),
            num_reconfigurations: 0,
            age_coarsening_shift: INITIAL_AGE_COARSENING_SHIFT,
            ewma_num_objects: 0,
            ewma_num_objects_mass: 0,
            ewma_victim_hit_density: 0,
            num_objects: 0,
            overflows: 0,
        }
    }

    fn class_of(m: &Meta) -> usize {
        let id = m.app as usize * HIT_AGE_CLASSES
            + hit_age_to_class(m.last_hit_age + m.last_last_hit_age);
        id & (NUM_CLASSES - 1)
    }

    fn age(&mut self, m: &Meta) -> usize {
        let age = (self.timestamp - m.last_access_time) >> self.age_coarsening_shift;
        if age >= MAX_AGE as u64 {
            self.overflows += 1;
            return MAX_AGE - 1;
        }
        age as usize
    }

    /// The folio's hit density: the sampling score (lowest is evicted).
    /// None for a folio the policy does not track.
    pub fn score(&mut self, key: u64) -> Option<u64> {
        let m = *self.meta.get(&key)?;
        let age = self.age(&m);
        if age == MAX_AGE - 1 {
            return Some(0);
        }
        Some(self.classes[Self::class_of(&m)].hit_densities[age])
    }

    fn tick(&mut self) {
        self.timestamp += 1;
        self.next_reconfiguration -= 1;
        if self.next_reconfiguration == 0 {
            self.next_reconfiguration = self.reqs_per_reconfig;
            self.num_reconfigurations += 1;
            self.reconfigure();
        }
    }

    pub fn folio_added(&mut self, key: u64) {
        self.meta.insert(
            key,
            Meta {
                last_access_time: self.timestamp,
                last_hit_age: 0,
                last_last_hit_age: MAX_AGE as u64,
                app: DEFAULT_APP_ID % APP_CLASSES as u32,
            },
        );
        self.num_objects += 1;
        self.tick();
    }

    pub fn folio_accessed(&mut self, key: u64) {
        let Some(m) = self.meta.get(&key).copied() else {
            return;
        };
        let age = self.age(&m);
        let cls = Self::class_of(&m);
        let ts = self.timestamp;
        if let Some(d) = self.meta.get_mut(&key) {
            d.last_last_hit_age = d.last_hit_age;
            d.last_hit_age = age as u64;
            d.last_access_time = ts;
        }
        // The hit counts under the class the folio had before this hit.
        self.classes[cls].hits[age] += HIT_SCALING_FACTOR;
        self.tick();
    }

    pub fn folio_evicted(&mut self, key: u64) {
        let Some(m) = self.meta.get(&key).copied() else {
            return;
        };
        let age = self.age(&m);
        let cls = Self::class_of(&m);
        self.classes[cls].evictions[age] += HIT_SCALING_FACTOR;
        self.num_objects = self.num_objects.saturating_sub(1);
        let hd = self.classes[cls].hit_densities[age];
        self.ewma_victim_hit_density = ewma_decay(self.ewma_victim_hit_density) + hd / 10;
        self.meta.remove(&key);
    }

    pub fn tracked(&self) -> usize {
        self.meta.len()
    }

    fn reconfigure(&mut self) {
        for c in &mut self.classes {
            for i in 0..MAX_AGE {
                c.hits[i] = ewma_decay(c.hits[i]);
                c.evictions[i] = ewma_decay(c.evictions[i]);
            }
        }
        self.adapt_age_coarsening();
        self.model_hit_density();
        self.overflows = 0;
    }

    fn adapt_age_coarsening(&mut self) {
        self.ewma_num_objects = ewma_decay(self.ewma_num_objects);
        self.ewma_num_objects_mass = ewma_decay(self.ewma_num_objects_mass);
        self.ewma_num_objects += self.num_objects * NUM_OBJECTS_SCALING_FACTOR;
        self.ewma_num_objects_mass += 1;
        let coarsening = self.ewma_num_objects / self.ewma_num_objects_mass;
        let optimal = coarsening * AGE_COARSENING_ERROR_TOLERANCE / MAX_AGE as u64;
        // The policy re-picks the shift at its 5th and 25th reconfiguration
        // only, as libCacheSim's LHD does.
        if self.num_reconfigurations == 5 || self.num_reconfigurations == 25 {
            let mut log2 = 1u64;
            while (1u64 << log2) * NUM_OBJECTS_SCALING_FACTOR < optimal {
                log2 += 1;
            }
            let delta = log2 as i64 - self.age_coarsening_shift as i64;
            self.age_coarsening_shift = log2;
            self.ewma_num_objects *= 8;
            self.ewma_num_objects_mass *= 8;
            if delta < 0 {
                self.stretch_distribution((-delta) as u32);
            } else if delta > 0 {
                self.compress_distribution(delta as u32);
            }
        }
    }

    /// A finer age unit: old buckets spread over more ages.
    fn stretch_distribution(&mut self, d: u32) {
        let d = d.min(13);
        for c in &mut self.classes {
            let init_age = MAX_AGE >> d;
            for j in init_age..MAX_AGE - 1 {
                c.hits[MAX_AGE - 1] += c.hits[j];
                // The policy assigns here rather than adding (kept as is).
                c.evictions[MAX_AGE - 1] = c.evictions[j];
            }
            for j in 2..=MAX_AGE {
                let index = MAX_AGE - j;
                c.hits[index] = c.hits[(j >> d) & (MAX_AGE - 1)] / (1 << d);
                c.evictions[index] = c.evictions[(j >> d) & (MAX_AGE - 1)] / (1 << d);
            }
        }
    }

    /// A coarser age unit: 2^d buckets fold into one.
    fn compress_distribution(&mut self, d: u32) {
        let d = d.min(13);
        for c in &mut self.classes {
            for j in 0..MAX_AGE >> d {
                let (mut h, mut e) = (0, 0);
                for k in 0..1usize << d {
                    h += c.hits[((j << d) + k) & (MAX_AGE - 1)];
                    e += c.evictions[((j << d) + k) & (MAX_AGE - 1)];
                }
                c.hits[j] = h;
                c.evictions[j] = e;
            }
            for j in MAX_AGE >> d..MAX_AGE - 1 {
                c.hits[j] = 0;
                c.evictions[j] = 0;
            }
        }
    }

    fn model_hit_density(&mut self) {
        for c in &mut self.classes {
            let mut total_hits = c.hits[MAX_AGE - 1];
            let mut total_events = total_hits + c.evictions[MAX_AGE - 1];
            let mut lifetime = total_events;
            for j in 2..=MAX_AGE {
                let index = MAX_AGE - j;
                total_hits += c.hits[index];
                // Evictions only: libCacheSim's LHD adds the hits too. So a
                // class whose folios are never evicted keeps density 0 until
                // some are (kept as the policy has it).
                total_events += c.evictions[index];
                lifetime += total_events;
                c.hit_densities[index] = if total_events > TOTAL_EVENTS_THRESH {
                    total_hits * HIT_DENSITY_SCALING_FACTOR / lifetime
                } else {
                    0
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_age_classes_are_log_scaled() {
        assert_eq!(hit_age_to_class(0), 0);
        assert_eq!(hit_age_to_class(MAX_AGE as u64), 0);
        assert_eq!(hit_age_to_class(MAX_AGE as u64 / 2), 1);
        assert_eq!(hit_age_to_class(2), 13);
        assert_eq!(hit_age_to_class(1), 14);
    }

    #[test]
    fn learns_that_reused_folios_are_denser() {
        // Folios 0..8 are hit again and again; folios 1000.. are each
        // added once and never hit (a scan). After reconfigurations the
        // model must score a hot folio above a scanned one of similar age.
        let mut l = Lhd::new(1 << 12, 1 << 10);
        for k in 0..8 {
            l.folio_added(k);
        }
        let mut next = 1000;
        for round in 0..20_000u64 {
            l.folio_accessed(round % 8);
            // Now and then a hot folio is reclaimed and read back, so its
            // class sees evictions too (the model needs both).
            if round % 500 == 499 {
                let k = round / 500 % 8;
                l.folio_evicted(k);
                l.folio_added(k);
            }
            if round % 2 == 0 {
                l.folio_added(next);
                // Scanned folios leave soon, as reclaim would take them.
                if next >= 1064 {
                    l.folio_evicted(next - 64);
                }
                next += 1;
            }
        }
        assert!(l.num_reconfigurations >= 20);
        let hot = l.score(3).unwrap();
        let cold = l.score(next - 1).unwrap();
        assert!(hot > cold, "hot {hot} <= cold {cold}");
        assert_eq!(l.score(5000), None);
        assert_eq!(l.tracked(), 8 + 64);
    }
}
