use super::memory_management::{GraphHolders, GraphMemoryManagement};
use crate::{
    NodeId,
    checkpoint::{
        base::{Checkpointer, NodeTree},
        builder::CheckpointerBuilder,
    },
    collections::HashMap,
    grads::Gradients,
    graph::{
        NodeRef, StepBoxed,
        traversal::{BreadthFirstSearch, TraversalItem},
    },
    tensor::NodeRefCount,
};
use alloc::vec::Vec;
use burn_backend::tensor::FloatTensor;

#[cfg(feature = "distributed")]
use crate::distributed::{DistributedGradientRegistration, DistributedRegistration};
#[cfg(not(feature = "distributed"))]
use burn_backend::Backend;
#[cfg(feature = "distributed")]
use burn_backend::distributed::{DistributedBackend, DistributedParams};

struct TapeResult {
    tape: Vec<Vec<StepBoxed>>,
    checkpointer: Checkpointer,
    #[cfg(feature = "distributed")]
    n_required_map: HashMap<NodeId, usize>,
    #[cfg(feature = "distributed")]
    distributed_params: HashMap<NodeId, DistributedParams>,
}

#[derive(Default)]
pub struct AutodiffServer {
    steps: HashMap<NodeId, StepBoxed>,
    actions_builder: HashMap<NodeId, CheckpointerBuilder>,
    memory_management: GraphMemoryManagement,
}

/// Defines how nodes are clean.
pub trait NodeCleaner {
    /// Initialize a new cleaner.
    fn init() -> Self;
    /// Cleans a single [node](NodeId).
    fn clean(&mut self, node: &NodeId);
}

impl AutodiffServer {
    pub fn extend(&mut self, other: AutodiffServer) {
        self.steps.extend(other.steps);
        self.actions_builder.extend(other.actions_builder);
        self.memory_management.extend(other.memory_management);
    }

    pub fn register(&mut self, rc: NodeRefCount, step: StepBoxed, actions: CheckpointerBuilder) {
        let parents = step.parents();
        let node_id = *rc.as_ref();
        let node_ref = step.node_ref().map(alloc::sync::Arc::downgrade);

        self.memory_management.register(rc, parents, node_ref);

        self.steps.insert(node_id, step);
        self.actions_builder.insert(node_id, actions);
    }

    /// Takes the backward pass of `node_id` out of the graph: its tape (every step it reaches,
    /// removed from the graph) and the nodes it consumes. The caller runs the tape with no lock
    /// held ([`Tape::execute`]), then hands `consumed` to [`AutodiffServer::cleanup`] (nanobragg
    /// patch: 0.21.0 ran the steps inside the graph's lock, so a step that differentiates a
    /// graph of its own, on worker threads, could wait forever on that lock).
    pub fn take_tape(&mut self, node_id: NodeId) -> Tape {
        let step = self.steps.remove(&node_id).expect(
            "Node should have a step registered, did you forget to call \
             `Tensor::register_grad` on the tensor where you need gradients?",
        );
        let builder = self.actions_builder.remove(&node_id).unwrap();

        let mut consumed = Vec::new();
        let result = self.build_tape(node_id, step, builder, &mut consumed);
        Tape { result, consumed }
    }

    /// How many times the registered steps hold each node: a step holds its own node (when it
    /// says so, [`crate::graph::Step::node_ref`]) and each of its parents' (nanobragg patch).
    fn holders(&self) -> GraphHolders {
        let mut holders = GraphHolders::default();
        for step in self.steps.values() {
            if step.node_ref().is_some() {
                holders.add(step.node());
            }
            for parent in step.parents() {
                holders.add(parent.id);
            }
        }
        holders
    }

    /// Frees what the backward pass made unreachable; the cleaner it returns has seen every
    /// freed node (nanobragg patch: returned so the caller can act after releasing its lock).
    /// The steps it removes come back too, to be dropped once the graph's lock is released
    /// (dropping a step drops the tensors it saved: no foreign code runs under a graph's lock).
    pub fn cleanup<NC: NodeCleaner>(&mut self, consumed: &[NodeId]) -> (NC, Vec<StepBoxed>) {
        let mut cleaner = NC::init();
        let mut removed = Vec::new();
        let holders = self.holders();
        self.memory_management
            .free_unavailable_nodes(&holders, |node_id: &NodeId| {
                removed.extend(self.steps.remove(node_id));
                self.actions_builder.remove(node_id);
                NC::clean(&mut cleaner, node_id);
            });
        for node_id in consumed {
            cleaner.clean(node_id)
        }
        (cleaner, removed)
    }

    /// Frees the roots of a graph no tensor and no operation in progress uses any more, as
    /// the sweep after every backward pass does for every graph of the process. A graph whose
    /// nodes are all unreferenced by tensors may still be in use by an operation being built on
    /// another thread (its inputs' reference counts already dropped, its output not yet
    /// registered): the holders of the nodes tell (nanobragg patch).
    /// The removed steps are returned, to be dropped once the graph's lock is released.
    pub(crate) fn free_unused_roots(
        &mut self,
        mut on_free_graph: impl FnMut(&NodeId),
    ) -> Vec<StepBoxed> {
        let mut removed = Vec::new();
        if self.memory_management.referenced_by_tensors() {
            return removed;
        }
        let holders = self.holders();
        if self.memory_management.maybe_useful(&holders) {
            return removed;
        }
        self.memory_management
            .free_unused_roots(&holders, |node_id| {
                removed.extend(self.steps.remove(node_id));
                self.actions_builder.remove(node_id);
                on_free_graph(node_id);
            });
        removed
    }

    fn build_tape(
        &mut self,
        node: NodeId,
        node_step: StepBoxed,
        mut builder: CheckpointerBuilder,
        consumed: &mut Vec<NodeId>,
    ) -> TapeResult {
        let mut tape = (0..node_step.depth() + 1)
            .map(|_| Vec::with_capacity(1))
            .collect::<Vec<_>>();

        let mut tree = HashMap::default();

        #[cfg(feature = "distributed")]
        let mut n_required_map = HashMap::default();
        #[cfg(feature = "distributed")]
        let mut distributed_params = HashMap::default();

        BreadthFirstSearch.traverse(node, node_step, &mut self.steps, |id, step| {
            self.memory_management.consume_node(id);
            // Clean up consumed node
            consumed.push(id);

            let depth = step.depth();

            #[cfg(feature = "distributed")]
            step.distributed_params()
                .and_then(|params| distributed_params.insert(id, params));

            if let Some(steps) = tape.get_mut(depth) {
                let parents = step
                    .parents()
                    .iter()
                    .map(|p| {
                        #[cfg(feature = "distributed")]
                        {
                            *n_required_map.entry(p.id).or_insert(0) += 1;
                        }
                        p.id
                    })
                    .filter(|s| *s != id);
                tree.insert(id, parents.collect());
                steps.push(step);
            }

            if let Some(node_builder) = self.actions_builder.remove(&id) {
                builder.extend(node_builder);
            }
        });

        let checkpointer = builder.build(NodeTree::new(tree));

        TapeResult {
            tape,
            checkpointer,
            #[cfg(feature = "distributed")]
            n_required_map,
            #[cfg(feature = "distributed")]
            distributed_params,
        }
    }

    pub(crate) fn execute_steps(
        tape: Vec<Vec<StepBoxed>>,
        mut grads: Gradients,
        mut checkpointer: Checkpointer,
    ) -> Gradients {
        tape.into_iter().rev().for_each(|steps| {
            steps
                .into_iter()
                .for_each(|step| step.step(&mut grads, &mut checkpointer))
        });

        // For checkpointing tests
        #[cfg(feature = "export_tests")]
        assert!(checkpointer.is_empty());

        grads
    }

    #[cfg(feature = "distributed")]
    fn compute_gradients<B: DistributedBackend>(
        root_node: NodeRef,
        root_tensor: FloatTensor<B>,
        tape_result: TapeResult,
    ) -> Gradients {
        let device = &B::float_device(&root_tensor);

        // For DDP, we register the distributed parameters of the tensors' nodes used in the graph and the number of times they
        // appear as nodes to know when to launch gradients reducing.
        let mut sync_registration = None;
        let require_sync = !tape_result.distributed_params.is_empty();
        if require_sync {
            sync_registration = Some(Box::new(DistributedGradientRegistration::<B>::new(
                tape_result.n_required_map,
                tape_result.distributed_params.clone(),
            ))
                as Box<dyn DistributedRegistration + Send + Sync>);
            B::register_sync_parameters(
                device,
                tape_result.distributed_params.values().cloned().collect(),
            );
        }

        let grads = Gradients::new::<B>(root_node.clone(), root_tensor, sync_registration);
        Self::execute_steps(tape_result.tape, grads, tape_result.checkpointer)
    }
}

/// A backward pass taken out of its graph by [`AutodiffServer::take_tape`]: run with no lock
/// held (nanobragg patch).
pub struct Tape {
    result: TapeResult,
    /// The nodes the pass consumed, for [`AutodiffServer::cleanup`].
    pub consumed: Vec<NodeId>,
}

impl Tape {
    /// Runs the steps from the root's gradient; returns the gradients and the consumed nodes.
    #[cfg(not(feature = "distributed"))]
    pub fn execute<B: Backend>(
        self,
        root_node: NodeRef,
        root_tensor: FloatTensor<B>,
    ) -> (Gradients, Vec<NodeId>) {
        let grads = Gradients::new::<B>(root_node, root_tensor);
        let gradients =
            AutodiffServer::execute_steps(self.result.tape, grads, self.result.checkpointer);
        (gradients, self.consumed)
    }

    /// Runs the steps from the root's gradient; returns the gradients and the consumed nodes.
    #[cfg(feature = "distributed")]
    pub fn execute<B: DistributedBackend>(
        self,
        root_node: NodeRef,
        root_tensor: FloatTensor<B>,
    ) -> (Gradients, Vec<NodeId>) {
        let gradients = AutodiffServer::compute_gradients::<B>(root_node, root_tensor, self.result);
        (gradients, self.consumed)
    }
}
