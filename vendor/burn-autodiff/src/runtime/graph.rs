use super::{AutodiffClient, server::AutodiffServer};
use crate::{
    NodeId,
    checkpoint::builder::CheckpointerBuilder,
    grads::Gradients,
    graph::{Parent, StepBoxed},
    runtime::server::{NodeCleaner, Tape},
    tensor::{AutodiffTensor, NodeRefCount},
};
use alloc::sync::Arc;
use alloc::vec::Vec;

#[cfg(not(feature = "distributed"))]
use burn_backend::Backend;

#[cfg(feature = "distributed")]
use burn_backend::distributed::DistributedBackend;
use hashbrown::{HashMap, HashSet};

#[cfg(feature = "std")]
use parking_lot::Mutex;

#[cfg(not(feature = "std"))]
use spin::Mutex;

/// A client for managing multiple graphs using mutex-based synchronization.
///
/// The biggest benefit of using this client implementation is that each graph can modify its own
/// data without blocking other graphs, which is essential for multi-device training.
///
/// # Notes
///
/// The [AutodiffServer] fully supports multiple graphs with sharing nodes, however those type of
/// graphs will be stored under a single mutex-protected graph by the client, limiting
/// parallelisation.
#[derive(Clone, new, Debug)]
pub struct GraphMutexClient;

/// Manages a collection of graphs, mapping [node ids](NodeId) to their respective graph.
///
/// The `GraphLocator` is responsible for selecting and merging graphs based on their IDs and parent
/// dependencies, ensuring proper synchronization and server allocation.
///
/// # Notes
///
/// Multiple node ids can point to the same graph, where the autodiff graph is stored.
#[derive(Default)]
pub struct GraphLocator {
    graphs: HashMap<NodeId, Arc<Graph>>,
    /// We keep a mapping of each graph (by its [`Graph::id`]) => all nodes that point to that
    /// graph. This is to ensure that when merging graphs, we correctly move all previous graphs
    /// to the new merged one. (nanobragg patch: 0.21.0 keyed this by the graph's origin node,
    /// left the merged graph's origin out of the main graph's set, so that entry kept pointing
    /// at the emptied graph after a second merge, and let a new graph reuse an origin and
    /// overwrite the set of a live graph.)
    keys: HashMap<usize, HashSet<NodeId>>,
}

/// Represents a single computation graph with a mutex-protected server.
///
/// Each `Graph` contains an [AutodiffServer] and the original [NodeId] where the server was
/// first created.
pub(crate) struct Graph {
    /// Unique among the process's graphs (nanobragg patch).
    id: usize,
    origin: NodeId,
    state: Mutex<GraphState>,
    /// The graph this one's server was moved into by a merge, set under the locator's lock
    /// (nanobragg patch): a stale entry still leads to the live graph.
    merged_into: Mutex<Option<Arc<Graph>>>,
}

impl Graph {
    /// The graph that holds this one's server now: itself, or where its merges ended.
    fn live(self: &Arc<Self>) -> Arc<Graph> {
        let mut graph = self.clone();
        loop {
            let next = graph.merged_into.lock().clone();
            match next {
                Some(next) => graph = next,
                None => return graph,
            }
        }
    }
}

/// The next [`Graph::id`].
static NEXT_GRAPH_ID: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

#[derive(Default)]
struct GraphState {
    server: AutodiffServer,
    /// Set when the graph was merged into another (its server moved there): a thread that
    /// looked this graph up before the merge and locked it after must look up again, or its
    /// step would land in a server no one reads (nanobragg patch).
    retired: bool,
}

impl core::fmt::Debug for Graph {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Graph")
            .field("id", &self.id)
            .field("origin", &self.origin)
            .finish()
    }
}

static STATE: Mutex<Option<GraphLocator>> = Mutex::new(None);

impl GraphMutexClient {
    /// Retrieves or creates a graph for the given [NodeId] and parent dependencies.
    ///
    /// # Parameters
    /// - `node`: The unique identifier for the stream.
    /// - `parents`: A slice of parent nodes that the stream depends on.
    ///
    /// # Returns
    /// An `Arc<Graph>` representing the selected or newly created stream.
    fn graph(node: NodeId, parents: &[Parent]) -> Arc<Graph> {
        let mut state = STATE.lock();

        match state.as_mut() {
            Some(locator) => locator.select(node, parents),
            None => {
                let mut locator = GraphLocator::default();
                let stream = locator.select(node, parents);
                *state = Some(locator);
                stream
            }
        }
    }
}

impl AutodiffClient for GraphMutexClient {
    fn register(&self, node_id_ref: NodeRefCount, step: StepBoxed, actions: CheckpointerBuilder) {
        let node_id = *node_id_ref;
        loop {
            let graph = GraphMutexClient::graph(node_id, step.parents());
            crate::chaos::pause();
            let mut state = graph.state.lock();
            // merged away between the lookup and the lock: look up again (nanobragg patch)
            if state.retired {
                continue;
            }
            state.server.register(node_id_ref, step, actions);
            return;
        }
    }

    #[cfg(not(feature = "distributed"))]
    fn backward<B: Backend>(&self, root: AutodiffTensor<B>) -> Gradients {
        let (graph, tape) = take_tape(root.node.id);
        crate::chaos::pause();
        let (grads, consumed) = tape.execute::<B>(root.node, root.primitive);
        crate::chaos::pause();
        finish_backward(graph, &consumed);
        grads
    }

    #[cfg(feature = "distributed")]
    fn backward<B: DistributedBackend>(&self, root: AutodiffTensor<B>) -> Gradients {
        let (graph, tape) = take_tape(root.node.id);
        crate::chaos::pause();
        let (grads, consumed) = tape.execute::<B>(root.node, root.primitive);
        crate::chaos::pause();
        finish_backward(graph, &consumed);
        grads
    }
}

/// A backward pass in three phases, so that no lock is held while its steps run (nanobragg
/// patch; 0.21.0 ran them inside the graph's lock, and a step that differentiates a graph of
/// its own on worker threads, as a recomputing backward does, waited on that lock forever
/// through the sweep or a merge): the tape is taken out of the graph under its lock, the steps
/// run with no lock held, and the graph (where any merge meanwhile moved it) is cleaned up
/// under its lock. See `vendor/README.md` for the locking order.
fn take_tape(root: NodeId) -> (Arc<Graph>, Tape) {
    loop {
        let graph = GraphMutexClient::graph(root, &[]);
        crate::chaos::pause();
        let mut state = graph.state.lock();
        // merged away between the lookup and the lock: look up again
        if state.retired {
            continue;
        }
        let tape = state.server.take_tape(root);
        drop(state);
        return (graph, tape);
    }
}

/// The last phase of a backward pass: frees what it made unreachable in `graph` (or the graph
/// it was merged into since), drops the freed steps once the lock is released, forgets the
/// freed nodes in the locator, then sweeps the other graphs.
fn finish_backward(graph: Arc<Graph>, consumed: &[NodeId]) {
    let (freed, removed) = loop {
        let graph = graph.live();
        let mut state = graph.state.lock();
        if state.retired {
            continue;
        }
        break state.server.cleanup::<FreedNodes>(consumed);
    };
    crate::chaos::pause();
    drop(removed);
    freed.remove_entries();
    crate::chaos::pause();
    GraphCleaner::cleanup_orphaned_entries();
}

/// The nodes a backward pass freed, whose locator entries are removed once the graph's lock is
/// released (nanobragg patch).
#[derive(Default)]
struct FreedNodes {
    nodes: Vec<NodeId>,
}

impl FreedNodes {
    fn remove_entries(self) {
        if self.nodes.is_empty() {
            return;
        }
        let mut dropped = Vec::new();
        let mut state = STATE.lock();
        if let Some(state) = state.as_mut() {
            for node in &self.nodes {
                dropped.extend(state.remove_entry(node));
            }
        }
        // a graph whose last entry went is dropped with no lock held
        drop(state);
        drop(dropped);
    }
}

impl NodeCleaner for FreedNodes {
    fn init() -> Self {
        Self::default()
    }

    fn clean(&mut self, node: &NodeId) {
        self.nodes.push(*node);
    }
}

/// The sweep of every graph that ends each backward pass. (0.21.0's cleaner also freed a backward
/// pass's nodes by taking the locator's lock while the graph's was held, which could deadlock
/// against a merge; [`FreedNodes`] does that now, after the graph's lock is released: nanobragg
/// patch.)
struct GraphCleaner;

impl GraphCleaner {
    fn cleanup_orphaned_entries() {
        let graphs = {
            // Get the available graphs and release the lock
            match STATE.lock().as_ref() {
                Some(state) => state.live_graphs(),
                None => return,
            }
        };

        let mut should_remove = Vec::new();
        let mut removed = Vec::new();
        crate::chaos::pause();
        for graph in graphs.iter() {
            crate::chaos::pause();
            // A graph whose lock is held is skipped: its own backward pass is running (perhaps
            // on this very thread, when a step differentiates a graph of its own, as a
            // recomputing backward does) or an operation is being registered in it. Waiting
            // would deadlock in the first case; the sweep is opportunistic, so a later one
            // frees what this one skips (nanobragg patch).
            let Some(mut guard) = graph.state.try_lock() else {
                continue;
            };
            // Only a graph that no tensor and no operation in progress uses is swept,
            // and only the nodes that can safely be removed (nanobragg patch: the check
            // of operations in progress is in `free_unused_roots`).
            removed.extend(
                guard
                    .server
                    .free_unused_roots(|node| should_remove.push(*node)),
            );
        }
        // the freed steps (and the tensors they saved) go with no graph's lock held
        drop(removed);
        crate::chaos::pause();

        if !should_remove.is_empty() {
            let mut dropped = Vec::new();
            let mut state = STATE.lock();
            if let Some(state) = state.as_mut() {
                for node in should_remove {
                    dropped.extend(state.remove_entry(&node));
                }
            }
            drop(state);
            drop(dropped);
        }
    }
}

impl GraphLocator {
    /// Selects a single graph for the given [NodeId], considering parent dependencies.
    ///
    /// If multiple graphs are found, they are merged into a single one.
    ///
    /// # Parameters
    /// - `node`: The node ID of the graph to select.
    /// - `parents`: A slice of parent nodes that the graph depends on.
    ///
    /// # Returns
    ///
    /// An `Arc<Graph>` representing the selected or merged graph.
    pub(crate) fn select(&mut self, node: NodeId, parents: &[Parent]) -> Arc<Graph> {
        let graph = match self.analyse(node, parents) {
            GraphAnalysis::NoCollision(graph) => graph,
            GraphAnalysis::Collisions(graphs) => self.merge(graphs),
        };
        self.graphs.insert(node, graph.clone());
        self.keys.entry(graph.id).or_default().insert(node);
        graph
    }

    /// Analyses the graph for a given node and its parents, returning the associated
    /// `GraphAnalysis`: the distinct live graphs of the node and its parents.
    fn analyse(&mut self, node: NodeId, parents: &[Parent]) -> GraphAnalysis {
        let mut graphs: Vec<Arc<Graph>> = Vec::new();
        for id in core::iter::once(&node).chain(parents.iter().map(|p| &p.id)) {
            if let Some(graph) = self.graphs.get(id) {
                let graph = graph.live();
                if !graphs.iter().any(|g| Arc::ptr_eq(g, &graph)) {
                    graphs.push(graph);
                }
            }
        }

        match graphs.len() {
            0 => GraphAnalysis::NoCollision(self.new_graph(node)),
            1 => GraphAnalysis::NoCollision(graphs.pop().unwrap()),
            _ => GraphAnalysis::Collisions(graphs),
        }
    }

    /// Merges multiple graphs into the first.
    fn merge(&mut self, graphs: Vec<Arc<Graph>>) -> Arc<Graph> {
        let mut graphs = graphs.into_iter();

        let main = graphs.next().expect("At least one graph");
        let mut state = main.state.lock();

        for graph in graphs {
            self.merge_two(&mut state, &main, graph);
        }

        core::mem::drop(state);

        main
    }

    /// Merges two graphs by combining their states and updating graph mappings.
    fn merge_two(&mut self, main_state: &mut GraphState, main: &Arc<Graph>, merged: Arc<Graph>) {
        let mut locked = merged.state.lock();
        let state_old = core::mem::take(&mut *locked);
        locked.retired = true;
        *merged.merged_into.lock() = Some(main.clone());
        main_state.server.extend(state_old.server);

        // Move all keys (node IDs) from the merged graph to the main graph
        if let Some(locator_keys) = self.keys.remove(&merged.id) {
            for k in locator_keys.iter() {
                self.graphs.insert(*k, main.clone());
            }
            self.keys.entry(main.id).or_default().extend(locator_keys);
        }
    }

    /// Creates a new graph for a given node.
    fn new_graph(&mut self, origin: NodeId) -> Arc<Graph> {
        Arc::new(Graph {
            id: NEXT_GRAPH_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
            origin,
            state: Mutex::new(GraphState::default()),
            merged_into: Mutex::new(None),
        })
    }

    /// Forgets `node`'s entry; returns the graph it pointed to, for the caller to drop once
    /// the locator's lock is released (it may be the graph's last reference, and dropping a
    /// graph drops its steps and the tensors they saved: nanobragg patch).
    fn remove_entry(&mut self, node: &NodeId) -> Option<Arc<Graph>> {
        let graph = self.graphs.remove(node)?;
        let id = graph.live().id;
        if let Some(entry) = self.keys.get_mut(&id) {
            entry.remove(node);
            if entry.is_empty() {
                self.keys.remove(&id);
            }
        }
        Some(graph)
    }

    /// Every live graph once.
    fn live_graphs(&self) -> Vec<Arc<Graph>> {
        let mut seen = HashSet::new();
        self.graphs
            .values()
            .map(|graph| graph.live())
            .filter(|graph| seen.insert(graph.id))
            .collect()
    }
}

/// Represents the analysis result of graph operations for a given node and its parents.
#[derive(Debug)]
enum GraphAnalysis {
    /// No collision detected, contains the graph associated with the node.
    NoCollision(Arc<Graph>),
    /// Collision detected, contains the distinct graphs to merge.
    Collisions(Vec<Arc<Graph>>),
}
