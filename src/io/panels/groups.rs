//! Panels tied into groups that move together: a *grouping* is a partition of the panels
//! into rigid groups. `-panel_groups NAME` chooses one for the panel-motion derivatives
//! ([`super::motion`]) and refinement:
//!
//! * `panels` (the default): every panel a group of its own;
//! * `all`: the whole detector one group;
//! * a CrystFEL `rigid_group_collection_NAME = g1,g2,…` of the `.geom`, each `rigid_group_g =
//!   panel,panel,…` a group (panels of no group of the collection are groups of their own);
//! * `level1`, `level2`, …: the nodes of a DIALS hierarchy at that depth below the root, each
//!   the panels under it, with the node's own fast and slow axes.

use super::{Panel, PanelLayout};
use crate::base::error::{Error, Result};
use crate::config::panel_layout::single;
pub use crate::config::panel_layout::{Grouping, PanelGroup};

impl PanelLayout {
    /// The names `-panel_groups` accepts for this layout.
    pub fn grouping_names(&self) -> Vec<String> {
        let mut names = vec!["panels".to_string(), "all".to_string()];
        names.extend(self.groupings.iter().map(|g| g.name.clone()));
        names
    }

    /// The grouping called `name` (see the module's documentation); every panel belongs to
    /// exactly one of its groups.
    pub fn grouping(&self, name: &str) -> Result<Grouping> {
        let mut grouping = match name {
            "panels" => return Ok(Grouping::each_panel(&self.panels)),
            "all" => Grouping {
                name: "all".into(),
                groups: vec![PanelGroup {
                    name: "all".into(),
                    panels: (0..self.panels.len()).collect(),
                    axes: None,
                }],
            },
            _ => self.groupings.iter().find(|g| g.name == name).cloned().ok_or_else(|| {
                Error::flag(
                    "-panel_groups",
                    format!(
                        "no grouping '{name}' (this detector has: {})",
                        self.grouping_names().join(", ")
                    ),
                )
            })?,
        };
        // panels of no group move on their own
        for (k, p) in self.panels.iter().enumerate() {
            if grouping.group_of(k).is_none() {
                grouping.groups.push(single(k, p));
            }
        }
        Ok(grouping)
    }
}

/// A CrystFEL grouping: `collection` names groups (`rigid_group_collection_NAME = a,b`), each
/// group names panels (`rigid_group_a = p0,p1`). `err(line, message)` reports a name that is
/// not defined.
pub(crate) fn crystfel_grouping(
    name: &str,
    collection: &[(String, usize)],
    groups: &[(String, Vec<String>, usize)],
    panels: &[Panel],
    err: &dyn Fn(usize, String) -> Error,
) -> Result<Grouping> {
    let mut out = Grouping {
        name: name.to_string(),
        groups: Vec::new(),
    };
    for (group, line) in collection {
        let (_, members, gline) = groups
            .iter()
            .find(|(n, _, _)| n == group)
            .ok_or_else(|| err(*line, format!("rigid_group_collection_{name}: no rigid_group_{group}")))?;
        let mut indices = Vec::new();
        for m in members {
            let k = panels
                .iter()
                .position(|p| &p.name == m)
                .ok_or_else(|| err(*gline, format!("rigid_group_{group}: no panel '{m}'")))?;
            if let Some(other) = out.group_of(k).map(|g| out.groups[g].name.clone()) {
                return Err(err(
                    *gline,
                    format!(
                        "rigid_group_collection_{name}: panel '{m}' is in rigid_group_{other} and rigid_group_{group}"
                    ),
                ));
            }
            indices.push(k);
        }
        out.groups.push(PanelGroup {
            name: group.clone(),
            panels: indices,
            axes: None,
        });
    }
    Ok(out)
}
