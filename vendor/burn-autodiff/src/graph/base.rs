use super::{NodeId, NodeRef};
use crate::{checkpoint::base::Checkpointer, grads::Gradients, graph::Parent};
use alloc::boxed::Box;

#[cfg(feature = "distributed")]
use burn_backend::distributed::DistributedParams;

/// Backward step for reverse mode autodiff.
pub trait Step: Send + core::fmt::Debug {
    /// Executes the step and consumes it.
    fn step(self: Box<Self>, grads: &mut Gradients, checkpointer: &mut Checkpointer);
    /// Depth of the operation relative to the first node added to a graph.
    fn depth(&self) -> usize;
    /// The node associated to the step.
    fn node(&self) -> NodeId;
    /// The parents of the node associated to the step.
    fn parents(&self) -> &[Parent];
    /// The graph node of the step's own tensor, when the step holds it (nanobragg patch).
    ///
    /// Besides the step itself, a node is held only by its tensors, by the steps of its
    /// children and by operations still being built on it. The memory management compares the
    /// node's holders with the steps registered in its graph to tell a node that an operation
    /// in progress may still give a child from a node nothing can reach any more. A step that
    /// returns `None` (the default) is treated as before: only its tensors keep it.
    fn node_ref(&self) -> Option<&NodeRef> {
        None
    }

    #[cfg(feature = "distributed")]
    /// Returns the [`DistributedParams`] of the node's tensor associated to the step.
    fn distributed_params(&self) -> Option<DistributedParams>;
}

pub type StepBoxed = Box<dyn Step>;
