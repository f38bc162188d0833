//! An indexed max-heap of vertices keyed by `(key[v], v)`, the keys kept by the caller:
//! each vertex is in the heap at most once, and a key that rose is fixed in place
//! (instead of pushing a second entry and skipping stale ones when they surface).

/// Vertices `0..n` in a binary max-heap by `(key[v], v)`.
#[derive(Debug, Clone)]
pub(crate) struct GainHeap {
    heap: Vec<u32>,
    /// Each vertex's index in `heap`, `u32::MAX` when absent.
    pos: Vec<u32>,
}

impl GainHeap {
    /// An empty heap for vertices `0..n`.
    pub(crate) fn new(n: usize) -> Self {
        GainHeap {
            heap: Vec::new(),
            pos: vec![u32::MAX; n],
        }
    }

    /// Puts `v` in the heap, or moves it up after its key rose (`key[v]` is its key
    /// now; a key may only rise while its vertex is in the heap).
    pub(crate) fn raise(&mut self, v: usize, key: &[i64]) {
        let i = if self.pos[v] == u32::MAX {
            self.heap.push(v as u32);
            self.heap.len() - 1
        } else {
            self.pos[v] as usize
        };
        self.up(i, v as u32, key);
    }

    /// Removes `v` if it is in the heap (its key unchanged since it was last raised).
    pub(crate) fn remove(&mut self, v: usize, key: &[i64]) {
        let i = self.pos[v];
        if i == u32::MAX {
            return;
        }
        self.pos[v] = u32::MAX;
        let last = self.heap.pop().expect("v is in the heap");
        let i = i as usize;
        if i < self.heap.len() {
            // the last vertex fills the hole, and moves up or down from there
            self.up(i, last, key);
            let j = self.pos[last as usize] as usize;
            self.down(j, last, key);
        }
    }

    /// Takes the vertex of greatest `(key[v], v)`.
    pub(crate) fn pop(&mut self, key: &[i64]) -> Option<usize> {
        let top = *self.heap.first()? as usize;
        self.remove(top, key);
        Some(top)
    }

    fn greater(a: u32, b: u32, key: &[i64]) -> bool {
        (key[a as usize], a) > (key[b as usize], b)
    }

    /// Moves `v` up from index `i` (its slot, to be written) to its place.
    fn up(&mut self, mut i: usize, v: u32, key: &[i64]) {
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !Self::greater(v, p, key) {
                break;
            }
            self.heap[i] = p;
            self.pos[p as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = v;
        self.pos[v as usize] = i as u32;
    }

    /// Moves `v` down from index `i` (its slot) to its place.
    fn down(&mut self, mut i: usize, v: u32, key: &[i64]) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && Self::greater(self.heap[r], self.heap[l], key) {
                r
            } else {
                l
            };
            let cv = self.heap[c];
            if !Self::greater(cv, v, key) {
                break;
            }
            self.heap[i] = cv;
            self.pos[cv as usize] = i as u32;
            i = c;
        }
        self.heap[i] = v;
        self.pos[v as usize] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pops against the greatest `(key, vertex)` found by a scan, under random raises
    /// and removals.
    #[test]
    fn pops_the_greatest_key_under_raises_and_removals() {
        let n = 300;
        let mut key = vec![0i64; n];
        let mut inside = vec![false; n];
        let mut h = GainHeap::new(n);
        let mut x = 12345u64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..20_000 {
            let v = rnd(n as u64) as usize;
            match rnd(4) {
                0 | 1 => {
                    key[v] += rnd(5) as i64;
                    h.raise(v, &key);
                    inside[v] = true;
                }
                2 => {
                    h.remove(v, &key);
                    inside[v] = false;
                }
                _ => {
                    let want = (0..n).filter(|&u| inside[u]).max_by_key(|&u| (key[u], u));
                    assert_eq!(h.pop(&key), want);
                    if let Some(u) = want {
                        inside[u] = false;
                    }
                }
            }
        }
    }
}
