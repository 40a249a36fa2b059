package main

// Privileges as vCenter evaluates them, for the program's privilege check
// (components/vsphere/providers/privileges.py).
//
// govmomi's simulator answers HasPrivilegeOnEntities with IsGranted true for every
// privilege, whoever asks (simulator/authorization_manager.go, 0.24.2 and still
// v0.54.1), so an account that lacks a privilege cannot be simulated with it. It does
// keep roles (AddAuthorizationRole) and permissions (SetEntityPermissions,
// RetrieveEntityPermissions); here HasPrivilegeOnEntities reads them the way the
// vSphere Security guide describes permission inheritance: the permission for the
// user on the entity itself, else on the nearest ancestor whose permission
// propagates, gives the user that role's privileges there; no permission, no
// privilege. Group permissions are not modelled. A session other than the caller's
// holds nothing ("If the session does not exist, false is returned for all
// privileges", AuthorizationManager.HasPrivilegeOnEntities, vSphere API 5.5).

import (
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/simulator/esx"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// vcenterPrivileges are vCenter privileges the program's role names that the Admin
// role govmomi 0.24.2 copies lacks: it is an ESXi host's ("govc object.collect ...
// AuthorizationManager:ha-authmgr roleList", simulator/esx/authorization_manager.go),
// and a host has no namespaces, VM classes, content libraries or storage policies.
// Without them in Admin, AddAuthorizationRole refuses roles that name them (privIDs:
// InvalidArgument). Ids from vCenter's API (components/vsphere/privileges.py).
var vcenterPrivileges = []string{"Namespaces.Configure", "Namespaces.Manage", "Namespaces.ListAccess",
	"VirtualMachineClasses.Manage", "StorageProfile.Update", "StorageProfile.View",
	"ContentLibrary.CreateSubscribedLibrary", "ContentLibrary.UpdateSubscribedLibrary",
	"ContentLibrary.DeleteSubscribedLibrary"}

// withVcenterPrivileges adds vcenterPrivileges to the Admin role template, before the
// model is created (AuthorizationManager.init reads it).
func withVcenterPrivileges() {
	for i := range esx.RoleList {
		if esx.RoleList[i].Name == "Admin" {
			esx.RoleList[i].Privilege = append(esx.RoleList[i].Privilege, vcenterPrivileges...)
		}
	}
}

// privilegeEvaluator replaces the simulator's AuthorizationManager object and
// overrides only HasPrivilegeOnEntities.
type privilegeEvaluator struct {
	*simulator.AuthorizationManager
}

// evaluatePrivileges installs the evaluator and gives user the Admin role on the
// root folder, as a vCenter's administrator has it.
func evaluatePrivileges(model *simulator.Model, user string) {
	ref := *model.ServiceContent.AuthorizationManager
	manager := simulator.Map.Get(ref).(*simulator.AuthorizationManager)
	root := model.ServiceContent.RootFolder
	admin := object.AuthorizationRoleList(manager.RoleList).ByName("Admin")
	permissions := manager.RetrieveEntityPermissions(&types.RetrieveEntityPermissions{Entity: root}).(*methods.RetrieveEntityPermissionsBody).Res.Returnval
	permissions = append(permissions, types.Permission{Entity: &root, Principal: user, RoleId: admin.RoleId, Propagate: true})
	manager.SetEntityPermissions(&types.SetEntityPermissions{Entity: root, Permission: permissions})
	simulator.Map.Put(&privilegeEvaluator{manager})
}

// Get hands the property collector the simulator's own object: govmomi 0.24.2 reads
// properties from a wrapper's first field only when it is an mo struct, not a pointer
// (simulator/property_collector.go, getObject and getManagedObject).
func (m *privilegeEvaluator) Get() mo.Reference {
	return m.AuthorizationManager
}

func (m *privilegeEvaluator) HasPrivilegeOnEntities(ctx *simulator.Context, req *types.HasPrivilegeOnEntities) soap.HasFault {
	user := ""
	if ctx.Session != nil && ctx.Session.Key == req.SessionId {
		user = ctx.Session.UserName
	}
	var result []types.EntityPrivilege
	for _, entity := range req.Entity {
		granted := m.granted(entity, user)
		answer := types.EntityPrivilege{Entity: entity}
		for _, id := range req.PrivId {
			answer.PrivAvailability = append(answer.PrivAvailability, types.PrivilegeAvailability{PrivId: id, IsGranted: granted[id]})
		}
		result = append(result, answer)
	}
	return &methods.HasPrivilegeOnEntitiesBody{Res: &types.HasPrivilegeOnEntitiesResponse{Returnval: result}}
}

// granted is the set of privileges user holds on ref: the role of the nearest
// permission for user, on ref itself or a propagating one on an ancestor.
func (m *privilegeEvaluator) granted(ref types.ManagedObjectReference, user string) map[string]bool {
	out := map[string]bool{}
	if user == "" {
		return out
	}
	for own := true; ; own = false {
		body := m.RetrieveEntityPermissions(&types.RetrieveEntityPermissions{Entity: ref}).(*methods.RetrieveEntityPermissionsBody)
		for _, p := range body.Res.Returnval {
			if !p.Group && strings.EqualFold(p.Principal, user) && (own || p.Propagate) {
				for _, role := range m.RoleList {
					if role.RoleId == p.RoleId {
						for _, id := range role.Privilege {
							out[id] = true
						}
					}
				}
				return out
			}
		}
		entity, ok := simulator.Map.Get(ref).(mo.Entity)
		if !ok || entity.Entity().Parent == nil {
			return out
		}
		ref = *entity.Entity().Parent
	}
}
