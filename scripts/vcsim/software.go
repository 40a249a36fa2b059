package main

// The software packages (VIBs) installed on each ESXi host, for the program's check of the
// hosts' NVIDIA vGPU Manager (components/vsphere/providers/vgpu_manager.py).
//
// vCenter answers HostImageConfigManager.fetchSoftwarePackages through each host's
// configManager.imageConfigManager (vSphere Web Services API, vim.host.ImageConfigManager,
// since 6.5: "Reports the set of software packages installed", SoftwarePackage[] with name,
// version, vendor, summary). govmomi 0.24.2's simulator has no HostImageConfigManager (the
// host's ConfigManager leaves it unset), so each host gets one here, answering with the
// packages -host-packages names: a JSON map of host name (or "*", every other host) to its
// packages, as a test sets up the hosts it simulates.

import (
	"encoding/json"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

type packageSpec struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Vendor  string `json:"vendor"`
	Summary string `json:"summary"`
}

type hostImageConfigManager struct {
	mo.HostImageConfigManager
	packages []types.SoftwarePackage
}

func (m *hostImageConfigManager) FetchSoftwarePackages(req *types.FetchSoftwarePackages) soap.HasFault {
	return &methods.FetchSoftwarePackagesBody{Res: &types.FetchSoftwarePackagesResponse{Returnval: m.packages}}
}

// installSoftware gives every host of the model its image config manager and packages.
func installSoftware(spec string) error {
	byHost := map[string][]packageSpec{}
	if spec != "" {
		if err := json.Unmarshal([]byte(spec), &byHost); err != nil {
			return err
		}
	}
	for _, entity := range simulator.Map.All("HostSystem") {
		host := entity.(*simulator.HostSystem)
		specs, ok := byHost[host.Name]
		if !ok {
			specs = byHost["*"]
		}
		manager := &hostImageConfigManager{}
		manager.Self = types.ManagedObjectReference{Type: "HostImageConfigManager", Value: "imageConfigManager-" + host.Self.Value}
		for _, p := range specs {
			manager.packages = append(manager.packages, types.SoftwarePackage{
				Name: p.Name, Version: p.Version, Type: "bootbank", Vendor: p.Vendor, AcceptanceLevel: "partner",
				Summary: p.Summary, Description: p.Summary})
		}
		simulator.Map.Put(manager)
		ref := manager.Self
		host.ConfigManager.ImageConfigManager = &ref
	}
	return nil
}
