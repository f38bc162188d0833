//! The C edge of libscotch (Debian `libscotch-dev`, Scotch 7.0, the 32-bit build in
//! the default library path): hand-written declarations of the few calls the mapper
//! uses and owners that release what they initialise. Every `unsafe` block of the
//! feature is in this file.
//!
//! `SCOTCH_Num` is `int` in `/usr/include/scotch/scotch.h` (the `scotch-int64` build
//! lives in another directory and is not linked); [`check_library`] compares it, and
//! the sizes of the opaque structures declared here, with what the linked library
//! reports before anything else is called. The library is linked with `libscotcherr`
//! (whose error handler prints the message and returns), never `libscotcherrexit`
//! (which would end the process), so every failure comes back as a non-zero return.

use std::os::raw::{c_char, c_double, c_int};
use std::ptr;
use std::sync::Mutex;

use super::ScotchError;

/// `SCOTCH_Num` of the linked library.
pub(super) type Num = i32;

/// `SCOTCH_Arch`: opaque, 11 doubles in Scotch 7.0.
#[repr(C)]
struct RawArch {
    dummy: [c_double; 11],
}

/// `SCOTCH_Graph`: opaque, 12 doubles.
#[repr(C)]
struct RawGraph {
    dummy: [c_double; 12],
}

/// `SCOTCH_Strat`: opaque, 1 double.
#[repr(C)]
struct RawStrat {
    dummy: [c_double; 1],
}

/// `SCOTCH_Context`: opaque, 3 doubles.
#[repr(C)]
struct RawContext {
    dummy: [c_double; 3],
}

#[link(name = "scotch")]
#[link(name = "scotcherr")]
extern "C" {
    fn SCOTCH_numSizeof() -> c_int;
    fn SCOTCH_archSizeof() -> c_int;
    fn SCOTCH_graphSizeof() -> c_int;
    fn SCOTCH_stratSizeof() -> c_int;
    fn SCOTCH_version(version: *mut c_int, release: *mut c_int, patch: *mut c_int);

    fn SCOTCH_archInit(arch: *mut RawArch) -> c_int;
    fn SCOTCH_archExit(arch: *mut RawArch);
    fn SCOTCH_archSize(arch: *const RawArch) -> Num;
    fn SCOTCH_archCmplt(arch: *mut RawArch, vertnbr: Num) -> c_int;
    fn SCOTCH_archTleaf(
        arch: *mut RawArch,
        levlnbr: Num,
        sizetab: *const Num,
        linktab: *const Num,
    ) -> c_int;
    fn SCOTCH_archTorus2(arch: *mut RawArch, xdimval: Num, ydimval: Num) -> c_int;
    fn SCOTCH_archTorus3(arch: *mut RawArch, xdimval: Num, ydimval: Num, zdimval: Num) -> c_int;
    fn SCOTCH_archTorusX(arch: *mut RawArch, dimnbr: Num, dimtab: *const Num) -> c_int;
    fn SCOTCH_archSub(
        subarch: *mut RawArch,
        orgarch: *mut RawArch,
        vnumnbr: Num,
        vnumtab: *const Num,
    ) -> c_int;
    fn SCOTCH_archBuild0(
        arch: *mut RawArch,
        graph: *const RawGraph,
        listnbr: Num,
        listtab: *const Num,
        strat: *const RawStrat,
    ) -> c_int;

    fn SCOTCH_graphInit(graph: *mut RawGraph) -> c_int;
    fn SCOTCH_graphExit(graph: *mut RawGraph);
    #[allow(clippy::too_many_arguments)]
    fn SCOTCH_graphBuild(
        graph: *mut RawGraph,
        baseval: Num,
        vertnbr: Num,
        verttab: *const Num,
        vendtab: *const Num,
        velotab: *const Num,
        vlbltab: *const Num,
        edgenbr: Num,
        edgetab: *const Num,
        edlotab: *const Num,
    ) -> c_int;
    fn SCOTCH_graphCheck(graph: *const RawGraph) -> c_int;
    fn SCOTCH_graphMap(
        graph: *mut RawGraph,
        arch: *const RawArch,
        strat: *mut RawStrat,
        parttab: *mut Num,
    ) -> c_int;

    fn SCOTCH_stratInit(strat: *mut RawStrat) -> c_int;
    fn SCOTCH_stratExit(strat: *mut RawStrat);

    fn SCOTCH_contextInit(context: *mut RawContext) -> c_int;
    fn SCOTCH_contextExit(context: *mut RawContext);
    fn SCOTCH_contextRandomClone(context: *mut RawContext) -> c_int;
    fn SCOTCH_contextRandomReset(context: *mut RawContext);
    fn SCOTCH_contextOptionParse(context: *mut RawContext, text: *const c_char) -> c_int;
    fn SCOTCH_contextBindGraph(
        context: *mut RawContext,
        orggraph: *const RawGraph,
        cntgraph: *mut RawGraph,
    ) -> c_int;
}

/// Held while a context takes its copy of libscotch's global random state.
static CONTEXT_SETUP: Mutex<()> = Mutex::new(());

/// Turns a Scotch return code into a result.
fn check(function: &'static str, code: c_int) -> Result<(), ScotchError> {
    if code == 0 {
        Ok(())
    } else {
        Err(ScotchError::Call { function, code })
    }
}

/// Checks that the linked library is Scotch 7 with the integer width and structure
/// sizes declared here.
///
/// # Errors
/// [`ScotchError::Library`] naming what differs.
pub(super) fn check_library() -> Result<(), ScotchError> {
    let (mut v, mut r, mut p) = (0, 0, 0);
    // SAFETY: the calls take no argument or write three ints we own; they read only
    // constants of the library.
    let (num, arch, graph, strat) = unsafe {
        SCOTCH_version(&mut v, &mut r, &mut p);
        (
            SCOTCH_numSizeof(),
            SCOTCH_archSizeof(),
            SCOTCH_graphSizeof(),
            SCOTCH_stratSizeof(),
        )
    };
    let want = |what: &'static str, found: c_int, want: usize| {
        if usize::try_from(found).ok() == Some(want) {
            Ok(())
        } else {
            Err(ScotchError::Library {
                what,
                found: i64::from(found),
                want: want as i64,
            })
        }
    };
    want("major version", v, 7)?;
    want("SCOTCH_numSizeof()", num, std::mem::size_of::<Num>())?;
    // the structures declared here must be at least as large as the library's
    let fits = |what: &'static str, found: c_int, ours: usize| {
        if usize::try_from(found).is_ok_and(|f| f <= ours) {
            Ok(())
        } else {
            Err(ScotchError::Library {
                what,
                found: i64::from(found),
                want: ours as i64,
            })
        }
    };
    fits("SCOTCH_archSizeof()", arch, std::mem::size_of::<RawArch>())?;
    fits(
        "SCOTCH_graphSizeof()",
        graph,
        std::mem::size_of::<RawGraph>(),
    )?;
    fits(
        "SCOTCH_stratSizeof()",
        strat,
        std::mem::size_of::<RawStrat>(),
    )
}

/// A Scotch target architecture; a sub-architecture keeps the architecture it is cut
/// from alive (`parent`), as libscotch refers to it.
pub(super) struct Arch {
    raw: Box<RawArch>,
    _parent: Option<Box<Arch>>,
}

impl Arch {
    fn init() -> Result<Self, ScotchError> {
        let mut raw = Box::new(RawArch { dummy: [0.0; 11] });
        // SAFETY: `raw` is writable memory of the size checked by `check_library`.
        check("SCOTCH_archInit", unsafe { SCOTCH_archInit(&mut *raw) })?;
        Ok(Self { raw, _parent: None })
    }

    /// The complete graph of `n` vertices.
    pub(super) fn complete(n: Num) -> Result<Self, ScotchError> {
        let mut a = Self::init()?;
        // SAFETY: `a.raw` was initialised by `SCOTCH_archInit`.
        check("SCOTCH_archCmplt", unsafe {
            SCOTCH_archCmplt(&mut *a.raw, n)
        })?;
        Ok(a)
    }

    /// A tree of `sizes[i]` children per vertex at level `i` (root first), link cost
    /// `links[i]` at level `i`.
    pub(super) fn tleaf(sizes: &[Num], links: &[Num]) -> Result<Self, ScotchError> {
        if sizes.len() != links.len() || sizes.is_empty() {
            return Err(ScotchError::Unsupported {
                reason: format!("tleaf of {} sizes and {} links", sizes.len(), links.len()),
            });
        }
        let mut a = Self::init()?;
        let levels = Num::try_from(sizes.len()).map_err(|_| ScotchError::TooLarge {
            what: "tleaf levels",
            value: sizes.len() as u128,
        })?;
        // SAFETY: both slices hold `levels` values and are only read during the call.
        check("SCOTCH_archTleaf", unsafe {
            SCOTCH_archTleaf(&mut *a.raw, levels, sizes.as_ptr(), links.as_ptr())
        })?;
        Ok(a)
    }

    /// A torus of extents `dims` (x first; Scotch numbers vertices x fastest): the
    /// `torus2D` and `torus3D` architectures for 2 and 3 dimensions (as a target
    /// file names them), `torusXD` otherwise.
    pub(super) fn torus(dims: &[Num]) -> Result<Self, ScotchError> {
        let mut a = Self::init()?;
        let n = Num::try_from(dims.len()).map_err(|_| ScotchError::TooLarge {
            what: "torus dimensions",
            value: dims.len() as u128,
        })?;
        // SAFETY: `a.raw` is initialised; `dims` holds `n` values, read during the
        // call only.
        let code = unsafe {
            match *dims {
                [x, y] => SCOTCH_archTorus2(&mut *a.raw, x, y),
                [x, y, z] => SCOTCH_archTorus3(&mut *a.raw, x, y, z),
                _ => SCOTCH_archTorusX(&mut *a.raw, n, dims.as_ptr()),
            }
        };
        check("SCOTCH_archTorus", code)?;
        Ok(a)
    }

    /// The vertices `terminals` of `parent`, in that order (vertex `k` of the result
    /// is `terminals[k]` of `parent`).
    pub(super) fn sub(parent: Arch, terminals: &[Num]) -> Result<Self, ScotchError> {
        let mut parent = Box::new(parent);
        let mut a = Self::init()?;
        let n = Num::try_from(terminals.len()).map_err(|_| ScotchError::TooLarge {
            what: "sub-architecture vertices",
            value: terminals.len() as u128,
        })?;
        // SAFETY: both architectures are initialised; `parent` is boxed and kept in
        // the result, so the pointer libscotch keeps to it stays valid until the
        // result is dropped (which exits the sub-architecture first).
        check("SCOTCH_archSub", unsafe {
            SCOTCH_archSub(&mut *a.raw, &mut *parent.raw, n, terminals.as_ptr())
        })?;
        a._parent = Some(parent);
        Ok(a)
    }

    /// The decomposition-defined architecture of the vertices `terminals` of
    /// `graph`, distances being shortest paths in `graph` weighted by its edge
    /// weights (libscotch computes them all).
    pub(super) fn from_graph(graph: &Graph, terminals: &[Num]) -> Result<Self, ScotchError> {
        let strat = Strat::new()?;
        let mut a = Self::init()?;
        let n = Num::try_from(terminals.len()).map_err(|_| ScotchError::TooLarge {
            what: "terminals",
            value: terminals.len() as u128,
        })?;
        let bound = Bound::new(graph)?;
        // SAFETY: all objects are initialised; `terminals` holds `n` values; the
        // built architecture copies what it needs (it does not refer to `graph`).
        check("SCOTCH_archBuild0", unsafe {
            SCOTCH_archBuild0(
                &mut *a.raw,
                &*bound.graph.0,
                n,
                terminals.as_ptr(),
                &*strat.raw,
            )
        })?;
        Ok(a)
    }

    /// Number of target vertices.
    pub(super) fn size(&self) -> Num {
        // SAFETY: `self.raw` is an initialised architecture.
        unsafe { SCOTCH_archSize(&*self.raw) }
    }
}

impl Drop for Arch {
    fn drop(&mut self) {
        // SAFETY: `self.raw` was initialised by `SCOTCH_archInit` and is exited once;
        // the parent (if any) is dropped after this, as fields drop after `drop`.
        unsafe { SCOTCH_archExit(&mut *self.raw) }
    }
}

/// A Scotch strategy; a new one is empty, which makes `SCOTCH_graphMap` use the
/// library's default mapping strategy (what `scotch_gmap` uses without `-m`/`-c`).
struct Strat {
    raw: Box<RawStrat>,
}

impl Strat {
    fn new() -> Result<Self, ScotchError> {
        let mut raw = Box::new(RawStrat { dummy: [0.0; 1] });
        // SAFETY: writable memory of the checked size.
        check("SCOTCH_stratInit", unsafe { SCOTCH_stratInit(&mut *raw) })?;
        Ok(Self { raw })
    }
}

impl Drop for Strat {
    fn drop(&mut self) {
        // SAFETY: initialised by `SCOTCH_stratInit`, exited once.
        unsafe { SCOTCH_stratExit(&mut *self.raw) }
    }
}

/// A Scotch source graph (base 0) over arrays it owns: libscotch refers to the arrays
/// without copying them, so they live as long as the graph.
pub(super) struct Graph {
    raw: Box<RawGraph>,
    _verttab: Vec<Num>,
    _edgetab: Vec<Num>,
    _edlotab: Vec<Num>,
}

impl Graph {
    /// The graph of CSR arrays `verttab` (`n + 1` offsets), `edgetab` (neighbours) and
    /// `edlotab` (edge weights), each edge listed from both ends with the same weight.
    ///
    /// # Errors
    /// [`ScotchError::Call`] when libscotch refuses the arrays (`SCOTCH_graphCheck`).
    pub(super) fn new(
        verttab: Vec<Num>,
        edgetab: Vec<Num>,
        edlotab: Vec<Num>,
    ) -> Result<Self, ScotchError> {
        let too_large = |what, v: usize| ScotchError::TooLarge {
            what,
            value: v as u128,
        };
        let vertnbr = Num::try_from(verttab.len().saturating_sub(1))
            .map_err(|_| too_large("vertices", verttab.len()))?;
        let edgenbr = Num::try_from(edgetab.len()).map_err(|_| too_large("arcs", edgetab.len()))?;
        if verttab.is_empty()
            || edlotab.len() != edgetab.len()
            || verttab.last().copied() != Some(edgenbr)
        {
            return Err(ScotchError::Unsupported {
                reason: "inconsistent graph arrays".into(),
            });
        }
        let mut raw = Box::new(RawGraph { dummy: [0.0; 12] });
        // SAFETY: writable memory of the checked size.
        check("SCOTCH_graphInit", unsafe { SCOTCH_graphInit(&mut *raw) })?;
        let mut g = Self {
            raw,
            _verttab: verttab,
            _edgetab: edgetab,
            _edlotab: edlotab,
        };
        // SAFETY: the arrays have the lengths checked above (vertnbr + 1 offsets,
        // edgenbr neighbours and weights), are owned by `g` and never change or move
        // (a Vec's buffer stays where it is) while the graph exists; `vendtab = NULL`
        // means compact arrays, no vertex weights or labels.
        check("SCOTCH_graphBuild", unsafe {
            SCOTCH_graphBuild(
                &mut *g.raw,
                0,
                vertnbr,
                g._verttab.as_ptr(),
                ptr::null(),
                ptr::null(),
                ptr::null(),
                edgenbr,
                g._edgetab.as_ptr(),
                g._edlotab.as_ptr(),
            )
        })?;
        // SAFETY: the graph was built above.
        check("SCOTCH_graphCheck", unsafe { SCOTCH_graphCheck(&*g.raw) })?;
        Ok(g)
    }

    fn vertices(&self) -> usize {
        self._verttab.len() - 1
    }

    /// Maps the graph onto `arch` with the default strategy in a deterministic context
    /// with a fixed random seed (`scotch_gmap -Cd`): target vertex of each graph vertex.
    ///
    /// # Errors
    /// [`ScotchError::Call`] for a failing libscotch call, [`ScotchError::Unsupported`]
    /// for a part number outside the architecture.
    pub(super) fn map(&self, arch: &Arch) -> Result<Vec<usize>, ScotchError> {
        let mut parts: Vec<Num> = vec![0; self.vertices()];
        let mut strat = Strat::new()?;
        let mut bound = Bound::new(self)?;
        // SAFETY: `bound` is a graph bound to its context, `arch` an initialised
        // architecture, `strat` an initialised strategy; `parts` holds one value per
        // vertex, as libscotch writes.
        check("SCOTCH_graphMap", unsafe {
            SCOTCH_graphMap(
                &mut *bound.graph.0,
                &*arch.raw,
                &mut *strat.raw,
                parts.as_mut_ptr(),
            )
        })?;
        drop(bound);
        let size = arch.size();
        parts
            .into_iter()
            .map(|q| {
                if (0..size).contains(&q) {
                    Ok(q as usize)
                } else {
                    Err(ScotchError::Unsupported {
                        reason: format!("libscotch returned part {q} of {size}"),
                    })
                }
            })
            .collect()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: built by `SCOTCH_graphInit` (+ `SCOTCH_graphBuild`), exited once,
        // before its arrays (fields drop after `drop`).
        unsafe { SCOTCH_graphExit(&mut *self.raw) }
    }
}

/// Exits a context when dropped.
struct ContextGuard(Box<RawContext>);

impl Drop for ContextGuard {
    fn drop(&mut self) {
        // SAFETY: initialised by `SCOTCH_contextInit`, exited once, after every graph
        // bound to it.
        unsafe { SCOTCH_contextExit(&mut *self.0) }
    }
}

/// Exits a (bound) graph when dropped.
struct GraphGuard(Box<RawGraph>);

impl Drop for GraphGuard {
    fn drop(&mut self) {
        // SAFETY: initialised by `SCOTCH_graphInit`, exited once, before its context.
        unsafe { SCOTCH_graphExit(&mut *self.0) }
    }
}

/// A view of a graph bound to its own context: deterministic, with its own random
/// state reset to the fixed seed (`scotch_gmap -Cd`), so that a result does not depend
/// on what libscotch computed before in the process or in another thread.
struct Bound {
    // dropped in this order: the bound graph before its context
    graph: GraphGuard,
    _context: ContextGuard,
}

impl Bound {
    fn new(g: &Graph) -> Result<Self, ScotchError> {
        let mut context = Box::new(RawContext { dummy: [0.0; 3] });
        // SAFETY: writable memory of the context's size.
        check("SCOTCH_contextInit", unsafe {
            SCOTCH_contextInit(&mut *context)
        })?;
        let mut context = ContextGuard(context);
        let mut graph = Box::new(RawGraph { dummy: [0.0; 12] });
        // SAFETY: writable memory of the graph's size.
        check("SCOTCH_graphInit", unsafe { SCOTCH_graphInit(&mut *graph) })?;
        let mut graph = GraphGuard(graph);
        // the context copies libscotch's global random state, which is set up on
        // first use: one thread at a time (a poisoned lock still guards)
        let _setup = CONTEXT_SETUP.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the context and graph are initialised; "d" is a NUL-terminated
        // option string (deterministic); binding makes `graph` a view of `g` that uses
        // the context, and the result keeps both (boxed, so they do not move) and
        // exits them in the right order, while the caller keeps `g` alive.
        unsafe {
            check(
                "SCOTCH_contextRandomClone",
                SCOTCH_contextRandomClone(&mut *context.0),
            )?;
            check(
                "SCOTCH_contextOptionParse",
                SCOTCH_contextOptionParse(&mut *context.0, c"d".as_ptr()),
            )?;
            SCOTCH_contextRandomReset(&mut *context.0);
            check(
                "SCOTCH_contextBindGraph",
                SCOTCH_contextBindGraph(&mut *context.0, &*g.raw, &mut *graph.0),
            )?;
        }
        Ok(Self {
            graph,
            _context: context,
        })
    }
}
