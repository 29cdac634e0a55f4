//! Intrusive doubly-linked lists of pages kept in a slab (`Vec<Option<T>>`),
//! with the kernel's `list_add` (at the head) and `list_first_entry`.

pub(crate) const NIL: u32 = u32::MAX;
/// "On no list".
pub(crate) const NO_LIST: u16 = u16::MAX;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Links {
    pub prev: u32,
    pub next: u32,
    pub list: u16,
}

impl Default for Links {
    fn default() -> Self {
        Links {
            prev: NIL,
            next: NIL,
            list: NO_LIST,
        }
    }
}

pub(crate) trait Linked {
    fn links(&self) -> &Links;
    fn links_mut(&mut self) -> &mut Links;
}

/// A slab of pages plus `n` list heads.
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
    free_ids: Vec<u32>,
    heads: Vec<u32>,
    live: usize,
}

impl<T: Linked> Slab<T> {
    pub fn new(nr_lists: usize) -> Self {
        Slab {
            items: Vec::new(),
            free_ids: Vec::new(),
            heads: vec![NIL; nr_lists],
            live: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn insert(&mut self, v: T) -> u32 {
        self.live += 1;
        match self.free_ids.pop() {
            Some(id) => {
                self.items[id as usize] = Some(v);
                id
            }
            None => {
                self.items.push(Some(v));
                (self.items.len() - 1) as u32
            }
        }
    }

    /// Remove (unlinking first) and return the item.
    pub fn remove(&mut self, id: u32) -> T {
        self.unlink(id);
        let v = self.items[id as usize].take().expect("live slab id");
        self.free_ids.push(id);
        self.live -= 1;
        v
    }

    pub fn get(&self, id: u32) -> &T {
        self.items[id as usize].as_ref().expect("live slab id")
    }

    pub fn get_mut(&mut self, id: u32) -> &mut T {
        self.items[id as usize].as_mut().expect("live slab id")
    }

    /// Two distinct items at once.
    pub fn get2_mut(&mut self, a: u32, b: u32) -> (&mut T, &mut T) {
        assert_ne!(a, b);
        let (a, b) = (a as usize, b as usize);
        if a < b {
            let (x, y) = self.items.split_at_mut(b);
            (x[a].as_mut().expect("live"), y[0].as_mut().expect("live"))
        } else {
            let (x, y) = self.items.split_at_mut(a);
            (y[0].as_mut().expect("live"), x[b].as_mut().expect("live"))
        }
    }

    /// `list_add`: at the head of list `l`.
    pub fn push_front(&mut self, l: usize, id: u32) {
        debug_assert_eq!(self.get(id).links().list, NO_LIST);
        let old = self.heads[l];
        if old != NIL {
            self.get_mut(old).links_mut().prev = id;
        }
        *self.get_mut(id).links_mut() = Links {
            prev: NIL,
            next: old,
            list: l as u16,
        };
        self.heads[l] = id;
    }

    /// `list_del_init`; no-op if not on a list.
    pub fn unlink(&mut self, id: u32) {
        let Links { prev, next, list } = *self.get(id).links();
        if list == NO_LIST {
            return;
        }
        if prev != NIL {
            self.get_mut(prev).links_mut().next = next;
        } else {
            self.heads[list as usize] = next;
        }
        if next != NIL {
            self.get_mut(next).links_mut().prev = prev;
        }
        *self.get_mut(id).links_mut() = Links::default();
    }

    pub fn first(&self, l: usize) -> Option<u32> {
        let h = self.heads[l];
        (h != NIL).then_some(h)
    }

    pub fn list_len(&self, l: usize) -> usize {
        let mut n = 0;
        let mut id = self.heads[l];
        while id != NIL {
            n += 1;
            id = self.get(id).links().next;
        }
        n
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i as u32, v)))
    }
}
