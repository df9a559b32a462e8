"""kube-vip as a static pod on every control-plane node: the API VIP with IPVS load balancing."""

from __future__ import annotations

from cdk8s_plus_27 import k8s

from constructs import Construct
from constructs.host_file import HostFile
from sitegen.model import ClusterLayout, ImagePin

MANIFEST_DIR = "/etc/kubernetes/manifests"
POD_NAME = "kube-vip"
NAMESPACE = "kube-system"


class KubeVipStaticPod(Construct):
    """ARP leader election holds the VIP; `lb_enable` spreads API traffic over all control-plane nodes.

    On Kubernetes >= 1.29 admin.conf has no rights until `kubeadm init` finishes, so the first node
    starts kube-vip with super-admin.conf (`bootstrap=True`) and switches to the normal manifest after.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: ClusterLayout,
        image: ImagePin,
        interface: str,
        bootstrap: bool = False,
    ) -> None:
        super().__init__(scope, id)
        kubeconfig = "/etc/kubernetes/super-admin.conf" if bootstrap else "/etc/kubernetes/admin.conf"
        first = cluster.control_plane.hosts[0].name
        file_name = "kube-vip-init.yaml" if bootstrap else "kube-vip.yaml"
        header = (
            f"On {first} only, before kubeadm init: copy to {MANIFEST_DIR}/kube-vip.yaml; replace it with "
            "kube-vip.yaml once init has finished."
            if bootstrap
            else f"Copy to {MANIFEST_DIR}/kube-vip.yaml on every control-plane node (on {first} after init)."
        )
        self.file = HostFile(self, "File", file_name=file_name, header=header)
        api = cluster.spec.api
        env = {
            "address": str(api.vip),
            "port": str(api.port),
            "vip_interface": interface,
            "vip_subnet": "32",
            "vip_arp": "true",
            "cp_enable": "true",
            "cp_namespace": NAMESPACE,
            "svc_enable": "false",  # Service load balancers belong to Cilium LB-IPAM
            "vip_leaderelection": "true",
            "vip_leaseduration": "5",
            "vip_renewdeadline": "3",
            "vip_retryperiod": "1",
            "lb_enable": "true",
            "lb_port": str(api.port),
            "prometheus_server": "127.0.0.1:2112",  # nothing scrapes it: not on the node's networks
        }
        k8s.KubePod(
            self.file,
            "Resource",
            metadata=k8s.ObjectMeta(name=POD_NAME, namespace=NAMESPACE),
            spec=k8s.PodSpec(
                host_network=True,
                host_aliases=[k8s.HostAlias(hostnames=["kubernetes"], ip="127.0.0.1")],
                priority_class_name="system-node-critical",
                containers=[
                    k8s.Container(
                        name="kube-vip",
                        image=image.ref,
                        image_pull_policy="IfNotPresent",
                        args=["manager"],
                        env=[k8s.EnvVar(name=k, value=v) for k, v in env.items()],
                        resources=k8s.ResourceRequirements(
                            requests={
                                "cpu": k8s.Quantity.from_string("100m"),
                                "memory": k8s.Quantity.from_string("64Mi"),
                            },
                            limits={"memory": k8s.Quantity.from_string("256Mi")},
                        ),
                        security_context=k8s.SecurityContext(
                            capabilities=k8s.Capabilities(
                                add=["NET_ADMIN", "NET_RAW", "SYS_TIME"], drop=["ALL"]
                            )
                        ),
                        volume_mounts=[
                            k8s.VolumeMount(name="kubeconfig", mount_path="/etc/kubernetes/admin.conf")
                        ],
                    )
                ],
                volumes=[
                    k8s.Volume(
                        name="kubeconfig",
                        host_path=k8s.HostPathVolumeSource(path=kubeconfig, type="File"),
                    )
                ],
            ),
        )
