//! The hash of the runtime's own maps (blob names, cache paths, header
//! set digests): fixed keys and a word at a time. It reads nothing else
//! of the crate.

/// How the runtime's own maps hash their keys (blob names, paths,
/// digests): [`FixedHasher`], with no random keys, so making a map asks
/// the system for no random bytes (a process that only hits would ask for
/// them alone), and a few words of a key cost a multiply each. No key
/// comes from anyone who could choose collisions: the manifest and the
/// cache are the process's own.
pub(crate) type FixedState = std::hash::BuildHasherDefault<FixedHasher>;

/// The multiply-and-rotate hash of rustc's own maps (FxHash), a word at a
/// time.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FixedHasher(u64);

impl FixedHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for FixedHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes([
                w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7],
            ]));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            // The length too: "a" and "a\0" differ.
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};
    use std::hash::BuildHasher;

    #[test]
    fn the_fixed_hash_tells_names_paths_and_digests_apart() {
        let names: Vec<String> = (0..20_000)
            .flat_map(|i| {
                [
                    format!(
                        "fmha_fwd_d{}_fp16_batch_b128x{}_r{}",
                        i % 256,
                        i / 256,
                        i % 7
                    ),
                    format!("/tmp/tree/kernels/start_{i}.c"),
                    format!("{:032x}", (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    "a".repeat(i % 40),
                    format!("k{i}\0"),
                ]
            })
            .collect();
        let distinct: HashSet<&String> = names.iter().collect();
        let state = FixedState::default();
        let hashes: HashSet<u64> = distinct.iter().map(|n| state.hash_one(n)).collect();
        assert_eq!(hashes.len(), distinct.len(), "a 64-bit hash repeated");
        assert_eq!(state.hash_one("k1"), FixedState::default().hash_one("k1"));
        let map: HashMap<&String, usize, FixedState> =
            distinct.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        assert!(distinct.iter().all(|n| map.contains_key(n)));
    }
}
