//! People who signed in through the identity provider (`console::oidc`), known beside the
//! users file's: each one's role and projects follow from the groups the provider gave at
//! their last sign-in, by the server's group mapping (`[[oidc.groups]]`), so a change of
//! their groups at the provider takes effect at their next sign-in, and a change of the
//! mapping at the next start. The store (`oidc_people`) is the record every instance shares;
//! this is each instance's copy, filled at start and refreshed at each sign-in and each look
//! at a console session.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::{Person, Role};
use crate::config::GroupGrant;
use crate::project::patterns::ProjectPatterns;

/// What the groups of `[[oidc.groups]]` grant.
#[derive(Debug, Default)]
pub(super) struct GroupMap {
    grants: Vec<GroupGrant>,
}

impl GroupMap {
    pub(super) fn new(grants: &[GroupGrant]) -> GroupMap {
        GroupMap {
            grants: grants.to_vec(),
        }
    }

    /// The person called `name` in `groups`: the highest role of their mapped groups, and
    /// every project of those; `None` when no group of theirs is mapped.
    fn person(&self, name: &str, groups: &[String]) -> Option<Person> {
        let mut role: Option<Role> = None;
        let mut projects: Vec<String> = Vec::new();
        for grant in &self.grants {
            if groups.contains(&grant.group) {
                role = role.max(Some(grant.role));
                for pattern in &grant.projects {
                    if !projects.contains(pattern) {
                        projects.push(pattern.clone());
                    }
                }
            }
        }
        // The mapping's patterns were checked at start (`OidcSettings`), so they compile.
        let projects = ProjectPatterns::new(projects).ok()?;
        Some(Person::signed_in(name.into(), role?, projects))
    }
}

/// The people who signed in through the provider, as this instance last saw them.
#[derive(Debug, Default)]
pub(super) struct SignedIn {
    map: GroupMap,
    people: RwLock<HashMap<Arc<str>, Known>>,
}

#[derive(Debug)]
struct Known {
    groups: Vec<String>,
    person: Arc<Person>,
}

impl SignedIn {
    pub(super) fn new(map: GroupMap) -> SignedIn {
        SignedIn {
            map,
            people: RwLock::default(),
        }
    }

    /// Takes `name` with `groups` as the provider last gave them: the person they are now,
    /// or `None` (and forgotten here) when no group of theirs is mapped.
    pub(super) fn refresh(&self, name: &str, groups: &[String]) -> Option<Arc<Person>> {
        if let Some(known) = self.read().get(name) {
            if known.groups == groups {
                return Some(known.person.clone());
            }
        }
        let mut people = self.people.write().unwrap_or_else(PoisonError::into_inner);
        match self.map.person(name, groups) {
            Some(person) => {
                let person = Arc::new(person);
                people.insert(
                    person.name.clone(),
                    Known {
                        groups: groups.to_vec(),
                        person: person.clone(),
                    },
                );
                Some(person)
            }
            None => {
                people.remove(name);
                None
            }
        }
    }

    /// Forgets `name` (the store no longer knows them).
    pub(super) fn forget(&self, name: &str) {
        self.people
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
    }

    /// The person called `name`, as last seen.
    pub(super) fn named(&self, name: &str) -> Option<Arc<Person>> {
        self.read().get(name).map(|known| known.person.clone())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Arc<str>, Known>> {
        self.people.read().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(group: &str, role: Role, projects: &[&str]) -> GroupGrant {
        GroupGrant {
            group: group.into(),
            role,
            projects: projects.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn groups_give_their_highest_role_and_all_their_projects() {
        let signed_in = SignedIn::new(GroupMap::new(&[
            grant("devs", Role::Member, &["web"]),
            grant("leads", Role::Admin, &["api-*"]),
            grant("readers", Role::Viewer, &["docs"]),
        ]));
        let groups = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let ana = signed_in
            .refresh("ana", &groups(&["devs", "readers", "other"]))
            .unwrap();
        assert_eq!(ana.role, Role::Member);
        assert!(ana.may_open("web") && ana.may_open("docs") && !ana.may_open("api-x"));
        let ana = signed_in.refresh("ana", &groups(&["leads"])).unwrap();
        assert_eq!(ana.role, Role::Admin);
        assert!(ana.may_open("api-x") && !ana.may_open("web"));
        assert_eq!(signed_in.named("ana").unwrap().role, Role::Admin);
        assert!(signed_in.refresh("ana", &groups(&["other"])).is_none());
        assert!(
            signed_in.named("ana").is_none(),
            "no mapped group: forgotten"
        );
        assert!(signed_in.refresh("bo", &[]).is_none());
    }
}
