from __future__ import annotations

from pkgutil import extend_path
__path__ = extend_path(__path__, __name__)

import abc
import builtins
import datetime
import enum
import typing

import jsii
import publication
import typing_extensions

from jsii._type_checking import cached_type_hints, check_type


from ._jsii import *

class _LazyImport:
    def __init__(self, module_name: str) -> None:
        self._module_name = module_name
        self._module: typing.Any = None
    def __getattr__(self, name: str) -> typing.Any:
        if self._module is None:
            import importlib
            self._module = importlib.import_module(self._module_name)
        return getattr(self._module, name)

if typing.TYPE_CHECKING:

    import cdk8s as _cdk8s_d3d9af27
    import constructs as _constructs_77d1e7e8
else:

    _cdk8s_d3d9af27 = _LazyImport("cdk8s")
    _constructs_77d1e7e8 = _LazyImport("constructs")


class LocalQueue(
    _cdk8s_d3d9af27.ApiObject,
    metaclass=jsii.JSIIMeta,
    jsii_type="iox-k8skueue.LocalQueue",
):
    '''LocalQueue is the Schema for the localQueues API.

    :schema: LocalQueue
    '''

    def __init__(
        self,
        scope: "_constructs_77d1e7e8.Construct",
        id: builtins.str,
        *,
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
        spec: typing.Optional[typing.Union["LocalQueueSpec", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> None:
        '''Defines a "LocalQueue" API object.

        :param scope: the scope in which to define this object.
        :param id: a scope-local name for the object.
        :param metadata: 
        :param spec: spec is the specification of the LocalQueue.
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__0923ce3af15908b2a4a35327ca0f02a8cc64b2f7ed48b77ef35ee444ced5b2b3)
            check_type(argname="argument scope", value=scope, expected_type=type_hints["scope"])
            check_type(argname="argument id", value=id, expected_type=type_hints["id"])
        props = LocalQueueProps(metadata=metadata, spec=spec)

        jsii.create(self.__class__, self, [scope, id, props])

    @jsii.member(jsii_name="manifest")
    @builtins.classmethod
    def manifest(
        cls,
        *,
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
        spec: typing.Optional[typing.Union["LocalQueueSpec", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> typing.Any:
        '''Renders a Kubernetes manifest for "LocalQueue".

        This can be used to inline resource manifests inside other objects (e.g. as templates).

        :param metadata: 
        :param spec: spec is the specification of the LocalQueue.
        '''
        props = LocalQueueProps(metadata=metadata, spec=spec)

        return typing.cast(typing.Any, jsii.sinvoke(cls, "manifest", [props]))

    @jsii.member(jsii_name="toJson")
    def to_json(self) -> typing.Any:
        '''Renders the object to Kubernetes JSON.'''
        return typing.cast(typing.Any, jsii.invoke(self, "toJson", []))

    @jsii.python.classproperty
    @jsii.member(jsii_name="GVK")
    def GVK(cls) -> "_cdk8s_d3d9af27.GroupVersionKind":
        '''Returns the apiVersion and kind for "LocalQueue".'''
        return typing.cast("_cdk8s_d3d9af27.GroupVersionKind", jsii.sget(cls, "GVK"))


@jsii.data_type(
    jsii_type="iox-k8skueue.LocalQueueProps",
    jsii_struct_bases=[],
    name_mapping={"metadata": "metadata", "spec": "spec"},
)
class LocalQueueProps:
    def __init__(
        self,
        *,
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
        spec: typing.Optional[typing.Union["LocalQueueSpec", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> None:
        '''LocalQueue is the Schema for the localQueues API.

        :param metadata: 
        :param spec: spec is the specification of the LocalQueue.

        :schema: LocalQueue
        '''
        if isinstance(metadata, dict):
            metadata = _cdk8s_d3d9af27.ApiObjectMetadata(**metadata)
        if isinstance(spec, dict):
            spec = LocalQueueSpec(**spec)
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__5fdcdb0ce070970d038c3961f3dffb6ef8c152152320380eff9c87bb006ec40e)
            check_type(argname="argument metadata", value=metadata, expected_type=type_hints["metadata"])
            check_type(argname="argument spec", value=spec, expected_type=type_hints["spec"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if metadata is not None:
            self._values["metadata"] = metadata
        if spec is not None:
            self._values["spec"] = spec

    @builtins.property
    def metadata(self) -> typing.Optional["_cdk8s_d3d9af27.ApiObjectMetadata"]:
        '''
        :schema: LocalQueue#metadata
        '''
        result = self._values.get("metadata")
        return typing.cast(typing.Optional["_cdk8s_d3d9af27.ApiObjectMetadata"], result)

    @builtins.property
    def spec(self) -> typing.Optional["LocalQueueSpec"]:
        '''spec is the specification of the LocalQueue.

        :schema: LocalQueue#spec
        '''
        result = self._values.get("spec")
        return typing.cast(typing.Optional["LocalQueueSpec"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "LocalQueueProps(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="iox-k8skueue.LocalQueueSpec",
    jsii_struct_bases=[],
    name_mapping={
        "cluster_queue": "clusterQueue",
        "fair_sharing": "fairSharing",
        "stop_policy": "stopPolicy",
    },
)
class LocalQueueSpec:
    def __init__(
        self,
        *,
        cluster_queue: typing.Optional[builtins.str] = None,
        fair_sharing: typing.Optional[typing.Union["LocalQueueSpecFairSharing", typing.Dict[builtins.str, typing.Any]]] = None,
        stop_policy: typing.Optional["LocalQueueSpecStopPolicy"] = None,
    ) -> None:
        '''spec is the specification of the LocalQueue.

        :param cluster_queue: clusterQueue is a reference to a clusterQueue that backs this localQueue.
        :param fair_sharing: fairSharing defines the properties of the LocalQueue when participating in AdmissionFairSharing. The values are only relevant if AdmissionFairSharing is enabled in the Kueue configuration.
        :param stop_policy: stopPolicy - if set to a value different from None, the LocalQueue is considered Inactive, no new reservation being made. Depending on its value, its associated workloads will: - None - Workloads are admitted - HoldAndDrain - Admitted workloads are evicted and Reserving workloads will cancel the reservation. - Hold - Admitted workloads will run to completion and Reserving workloads will cancel the reservation.

        :schema: LocalQueueSpec
        '''
        if isinstance(fair_sharing, dict):
            fair_sharing = LocalQueueSpecFairSharing(**fair_sharing)
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__934f01d1643edf3eaa51b4838e701da14397c6a0d4ca27f92860481415c2837a)
            check_type(argname="argument cluster_queue", value=cluster_queue, expected_type=type_hints["cluster_queue"])
            check_type(argname="argument fair_sharing", value=fair_sharing, expected_type=type_hints["fair_sharing"])
            check_type(argname="argument stop_policy", value=stop_policy, expected_type=type_hints["stop_policy"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if cluster_queue is not None:
            self._values["cluster_queue"] = cluster_queue
        if fair_sharing is not None:
            self._values["fair_sharing"] = fair_sharing
        if stop_policy is not None:
            self._values["stop_policy"] = stop_policy

    @builtins.property
    def cluster_queue(self) -> typing.Optional[builtins.str]:
        '''clusterQueue is a reference to a clusterQueue that backs this localQueue.

        :schema: LocalQueueSpec#clusterQueue
        '''
        result = self._values.get("cluster_queue")
        return typing.cast(typing.Optional[builtins.str], result)

    @builtins.property
    def fair_sharing(self) -> typing.Optional["LocalQueueSpecFairSharing"]:
        '''fairSharing defines the properties of the LocalQueue when participating in AdmissionFairSharing.

        The values are only relevant
        if AdmissionFairSharing is enabled in the Kueue configuration.

        :schema: LocalQueueSpec#fairSharing
        '''
        result = self._values.get("fair_sharing")
        return typing.cast(typing.Optional["LocalQueueSpecFairSharing"], result)

    @builtins.property
    def stop_policy(self) -> typing.Optional["LocalQueueSpecStopPolicy"]:
        '''stopPolicy - if set to a value different from None, the LocalQueue is considered Inactive, no new reservation being made.

        Depending on its value, its associated workloads will:

        - None - Workloads are admitted
        - HoldAndDrain - Admitted workloads are evicted and Reserving workloads will cancel the reservation.
        - Hold - Admitted workloads will run to completion and Reserving workloads will cancel the reservation.

        :schema: LocalQueueSpec#stopPolicy
        '''
        result = self._values.get("stop_policy")
        return typing.cast(typing.Optional["LocalQueueSpecStopPolicy"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "LocalQueueSpec(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="iox-k8skueue.LocalQueueSpecFairSharing",
    jsii_struct_bases=[],
    name_mapping={"weight": "weight"},
)
class LocalQueueSpecFairSharing:
    def __init__(
        self,
        *,
        weight: typing.Optional["LocalQueueSpecFairSharingWeight"] = None,
    ) -> None:
        '''fairSharing defines the properties of the LocalQueue when participating in AdmissionFairSharing.

        The values are only relevant
        if AdmissionFairSharing is enabled in the Kueue configuration.

        :param weight: weight gives a comparative advantage to this ClusterQueue or Cohort when competing for unused resources in the Cohort. The share is based on the dominant resource usage above nominal quotas for each resource, divided by the weight. Admission prioritizes scheduling workloads from ClusterQueues and Cohorts with the lowest share and preempting workloads from the ClusterQueues and Cohorts with the highest share. A zero weight implies infinite share value, meaning that this Node will always be at disadvantage against other ClusterQueues and Cohorts. When not 0, Weight must be greater than 10^-9.

        :schema: LocalQueueSpecFairSharing
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__c1694b9a7a75dde53eb659f275253ad29e263a40e8b4c3d5e6a17cdd3af273db)
            check_type(argname="argument weight", value=weight, expected_type=type_hints["weight"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if weight is not None:
            self._values["weight"] = weight

    @builtins.property
    def weight(self) -> typing.Optional["LocalQueueSpecFairSharingWeight"]:
        '''weight gives a comparative advantage to this ClusterQueue or Cohort when competing for unused resources in the Cohort.

        The share is based on the dominant resource usage
        above nominal quotas for each resource, divided by the
        weight.  Admission prioritizes scheduling workloads from
        ClusterQueues and Cohorts with the lowest share and
        preempting workloads from the ClusterQueues and Cohorts
        with the highest share.  A zero weight implies infinite
        share value, meaning that this Node will always be at
        disadvantage against other ClusterQueues and Cohorts.
        When not 0, Weight must be greater than 10^-9.

        :schema: LocalQueueSpecFairSharing#weight
        '''
        result = self._values.get("weight")
        return typing.cast(typing.Optional["LocalQueueSpecFairSharingWeight"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "LocalQueueSpecFairSharing(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


class LocalQueueSpecFairSharingWeight(
    metaclass=jsii.JSIIMeta,
    jsii_type="iox-k8skueue.LocalQueueSpecFairSharingWeight",
):
    '''weight gives a comparative advantage to this ClusterQueue or Cohort when competing for unused resources in the Cohort.

    The share is based on the dominant resource usage
    above nominal quotas for each resource, divided by the
    weight.  Admission prioritizes scheduling workloads from
    ClusterQueues and Cohorts with the lowest share and
    preempting workloads from the ClusterQueues and Cohorts
    with the highest share.  A zero weight implies infinite
    share value, meaning that this Node will always be at
    disadvantage against other ClusterQueues and Cohorts.
    When not 0, Weight must be greater than 10^-9.

    :schema: LocalQueueSpecFairSharingWeight
    '''

    @jsii.member(jsii_name="fromNumber")
    @builtins.classmethod
    def from_number(cls, value: jsii.Number) -> "LocalQueueSpecFairSharingWeight":
        '''
        :param value: -
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__9bac0db158ec3e7384cc2f345b1dd46e23cb2f58ebbfb275dafa6535cb6a6182)
            check_type(argname="argument value", value=value, expected_type=type_hints["value"])
        return typing.cast("LocalQueueSpecFairSharingWeight", jsii.sinvoke(cls, "fromNumber", [value]))

    @jsii.member(jsii_name="fromString")
    @builtins.classmethod
    def from_string(cls, value: builtins.str) -> "LocalQueueSpecFairSharingWeight":
        '''
        :param value: -
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__674ad5e9425746444da8b7f00f58afed6d8d0df521e716be7011c1e8196b5498)
            check_type(argname="argument value", value=value, expected_type=type_hints["value"])
        return typing.cast("LocalQueueSpecFairSharingWeight", jsii.sinvoke(cls, "fromString", [value]))

    @builtins.property
    @jsii.member(jsii_name="value")
    def value(self) -> typing.Union[builtins.str, jsii.Number]:
        return typing.cast(typing.Union[builtins.str, jsii.Number], jsii.get(self, "value"))


@jsii.enum(jsii_type="iox-k8skueue.LocalQueueSpecStopPolicy")
class LocalQueueSpecStopPolicy(enum.Enum):
    '''stopPolicy - if set to a value different from None, the LocalQueue is considered Inactive, no new reservation being made.

    Depending on its value, its associated workloads will:

    - None - Workloads are admitted
    - HoldAndDrain - Admitted workloads are evicted and Reserving workloads will cancel the reservation.
    - Hold - Admitted workloads will run to completion and Reserving workloads will cancel the reservation.

    :schema: LocalQueueSpecStopPolicy
    '''

    NONE = "NONE"
    '''None.'''
    HOLD = "HOLD"
    '''Hold.'''
    HOLD_AND_DRAIN = "HOLD_AND_DRAIN"
    '''HoldAndDrain.'''


class LocalQueueV1Beta2(
    _cdk8s_d3d9af27.ApiObject,
    metaclass=jsii.JSIIMeta,
    jsii_type="iox-k8skueue.LocalQueueV1Beta2",
):
    '''LocalQueue is the Schema for the localQueues API.

    :schema: LocalQueueV1Beta2
    '''

    def __init__(
        self,
        scope: "_constructs_77d1e7e8.Construct",
        id: builtins.str,
        *,
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
        spec: typing.Optional[typing.Union["LocalQueueV1Beta2Spec", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> None:
        '''Defines a "LocalQueueV1Beta2" API object.

        :param scope: the scope in which to define this object.
        :param id: a scope-local name for the object.
        :param metadata: 
        :param spec: spec is the specification of the LocalQueue.
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__bd930ff92566b8977c690637d05733a09428a78db17a54f0e478059526ee274f)
            check_type(argname="argument scope", value=scope, expected_type=type_hints["scope"])
            check_type(argname="argument id", value=id, expected_type=type_hints["id"])
        props = LocalQueueV1Beta2Props(metadata=metadata, spec=spec)

        jsii.create(self.__class__, self, [scope, id, props])

    @jsii.member(jsii_name="manifest")
    @builtins.classmethod
    def manifest(
        cls,
        *,
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
        spec: typing.Optional[typing.Union["LocalQueueV1Beta2Spec", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> typing.Any:
        '''Renders a Kubernetes manifest for "LocalQueueV1Beta2".

        This can be used to inline resource manifests inside other objects (e.g. as templates).

        :param metadata: 
        :param spec: spec is the specification of the LocalQueue.
        '''
        props = LocalQueueV1Beta2Props(metadata=metadata, spec=spec)

        return typing.cast(typing.Any, jsii.sinvoke(cls, "manifest", [props]))

    @jsii.member(jsii_name="toJson")
    def to_json(self) -> typing.Any:
        '''Renders the object to Kubernetes JSON.'''
        return typing.cast(typing.Any, jsii.invoke(self, "toJson", []))

    @jsii.python.classproperty
    @jsii.member(jsii_name="GVK")
    def GVK(cls) -> "_cdk8s_d3d9af27.GroupVersionKind":
        '''Returns the apiVersion and kind for "LocalQueueV1Beta2".'''
        return typing.cast("_cdk8s_d3d9af27.GroupVersionKind", jsii.sget(cls, "GVK"))


@jsii.data_type(
    jsii_type="iox-k8skueue.LocalQueueV1Beta2Props",
    jsii_struct_bases=[],
    name_mapping={"metadata": "metadata", "spec": "spec"},
)
class LocalQueueV1Beta2Props:
    def __init__(
        self,
        *,
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
        spec: typing.Optional[typing.Union["LocalQueueV1Beta2Spec", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> None:
        '''LocalQueue is the Schema for the localQueues API.

        :param metadata: 
        :param spec: spec is the specification of the LocalQueue.

        :schema: LocalQueueV1Beta2
        '''
        if isinstance(metadata, dict):
            metadata = _cdk8s_d3d9af27.ApiObjectMetadata(**metadata)
        if isinstance(spec, dict):
            spec = LocalQueueV1Beta2Spec(**spec)
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__6529ea365a3995da09b194f57c7ef32a3e2db74c598829d28c083b7f4c6095cc)
            check_type(argname="argument metadata", value=metadata, expected_type=type_hints["metadata"])
            check_type(argname="argument spec", value=spec, expected_type=type_hints["spec"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if metadata is not None:
            self._values["metadata"] = metadata
        if spec is not None:
            self._values["spec"] = spec

    @builtins.property
    def metadata(self) -> typing.Optional["_cdk8s_d3d9af27.ApiObjectMetadata"]:
        '''
        :schema: LocalQueueV1Beta2#metadata
        '''
        result = self._values.get("metadata")
        return typing.cast(typing.Optional["_cdk8s_d3d9af27.ApiObjectMetadata"], result)

    @builtins.property
    def spec(self) -> typing.Optional["LocalQueueV1Beta2Spec"]:
        '''spec is the specification of the LocalQueue.

        :schema: LocalQueueV1Beta2#spec
        '''
        result = self._values.get("spec")
        return typing.cast(typing.Optional["LocalQueueV1Beta2Spec"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "LocalQueueV1Beta2Props(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="iox-k8skueue.LocalQueueV1Beta2Spec",
    jsii_struct_bases=[],
    name_mapping={
        "cluster_queue": "clusterQueue",
        "fair_sharing": "fairSharing",
        "stop_policy": "stopPolicy",
    },
)
class LocalQueueV1Beta2Spec:
    def __init__(
        self,
        *,
        cluster_queue: typing.Optional[builtins.str] = None,
        fair_sharing: typing.Optional[typing.Union["LocalQueueV1Beta2SpecFairSharing", typing.Dict[builtins.str, typing.Any]]] = None,
        stop_policy: typing.Optional["LocalQueueV1Beta2SpecStopPolicy"] = None,
    ) -> None:
        '''spec is the specification of the LocalQueue.

        :param cluster_queue: clusterQueue is a reference to a clusterQueue that backs this localQueue.
        :param fair_sharing: fairSharing defines the properties of the LocalQueue when participating in AdmissionFairSharing. The values are only relevant if AdmissionFairSharing is enabled in the Kueue configuration.
        :param stop_policy: stopPolicy - if set to a value different from None, the LocalQueue is considered Inactive, no new reservation being made. Depending on its value, its associated workloads will: - None - Workloads are admitted - HoldAndDrain - Admitted workloads are evicted and Reserving workloads will cancel the reservation. - Hold - Admitted workloads will run to completion and Reserving workloads will cancel the reservation.

        :schema: LocalQueueV1Beta2Spec
        '''
        if isinstance(fair_sharing, dict):
            fair_sharing = LocalQueueV1Beta2SpecFairSharing(**fair_sharing)
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__9e3c68f96d2db7f9e44eee4fa0f7b9208a387f4ae25c4c9527dac5b68ba8d663)
            check_type(argname="argument cluster_queue", value=cluster_queue, expected_type=type_hints["cluster_queue"])
            check_type(argname="argument fair_sharing", value=fair_sharing, expected_type=type_hints["fair_sharing"])
            check_type(argname="argument stop_policy", value=stop_policy, expected_type=type_hints["stop_policy"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if cluster_queue is not None:
            self._values["cluster_queue"] = cluster_queue
        if fair_sharing is not None:
            self._values["fair_sharing"] = fair_sharing
        if stop_policy is not None:
            self._values["stop_policy"] = stop_policy

    @builtins.property
    def cluster_queue(self) -> typing.Optional[builtins.str]:
        '''clusterQueue is a reference to a clusterQueue that backs this localQueue.

        :schema: LocalQueueV1Beta2Spec#clusterQueue
        '''
        result = self._values.get("cluster_queue")
        return typing.cast(typing.Optional[builtins.str], result)

    @builtins.property
    def fair_sharing(self) -> typing.Optional["LocalQueueV1Beta2SpecFairSharing"]:
        '''fairSharing defines the properties of the LocalQueue when participating in AdmissionFairSharing.

        The values are only relevant
        if AdmissionFairSharing is enabled in the Kueue configuration.

        :schema: LocalQueueV1Beta2Spec#fairSharing
        '''
        result = self._values.get("fair_sharing")
        return typing.cast(typing.Optional["LocalQueueV1Beta2SpecFairSharing"], result)

    @builtins.property
    def stop_policy(self) -> typing.Optional["LocalQueueV1Beta2SpecStopPolicy"]:
        '''stopPolicy - if set to a value different from None, the LocalQueue is considered Inactive, no new reservation being made.

        Depending on its value, its associated workloads will:

        - None - Workloads are admitted
        - HoldAndDrain - Admitted workloads are evicted and Reserving workloads will cancel the reservation.
        - Hold - Admitted workloads will run to completion and Reserving workloads will cancel the reservation.

        :schema: LocalQueueV1Beta2Spec#stopPolicy
        '''
        result = self._values.get("stop_policy")
        return typing.cast(typing.Optional["LocalQueueV1Beta2SpecStopPolicy"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "LocalQueueV1Beta2Spec(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="iox-k8skueue.LocalQueueV1Beta2SpecFairSharing",
    jsii_struct_bases=[],
    name_mapping={"weight": "weight"},
)
class LocalQueueV1Beta2SpecFairSharing:
    def __init__(
        self,
        *,
        weight: typing.Optional["LocalQueueV1Beta2SpecFairSharingWeight"] = None,
    ) -> None:
        '''fairSharing defines the properties of the LocalQueue when participating in AdmissionFairSharing.

        The values are only relevant
        if AdmissionFairSharing is enabled in the Kueue configuration.

        :param weight: weight gives a comparative advantage to this ClusterQueue or Cohort when competing for unused resources in the Cohort. The share is based on the dominant resource usage above nominal quotas for each resource, divided by the weight. Admission prioritizes scheduling workloads from ClusterQueues and Cohorts with the lowest share and preempting workloads from the ClusterQueues and Cohorts with the highest share. A zero weight implies infinite share value, meaning that this Node will always be at disadvantage against other ClusterQueues and Cohorts. When not 0, Weight must be greater than 10^-9.

        :schema: LocalQueueV1Beta2SpecFairSharing
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__3a320ac3236f3db69bc1985cb54bebefded56f5b8333b9ba72a01afd9f835178)
            check_type(argname="argument weight", value=weight, expected_type=type_hints["weight"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if weight is not None:
            self._values["weight"] = weight

    @builtins.property
    def weight(self) -> typing.Optional["LocalQueueV1Beta2SpecFairSharingWeight"]:
        '''weight gives a comparative advantage to this ClusterQueue or Cohort when competing for unused resources in the Cohort.

        The share is based on the dominant resource usage
        above nominal quotas for each resource, divided by the
        weight.  Admission prioritizes scheduling workloads from
        ClusterQueues and Cohorts with the lowest share and
        preempting workloads from the ClusterQueues and Cohorts
        with the highest share.  A zero weight implies infinite
        share value, meaning that this Node will always be at
        disadvantage against other ClusterQueues and Cohorts.
        When not 0, Weight must be greater than 10^-9.

        :schema: LocalQueueV1Beta2SpecFairSharing#weight
        '''
        result = self._values.get("weight")
        return typing.cast(typing.Optional["LocalQueueV1Beta2SpecFairSharingWeight"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "LocalQueueV1Beta2SpecFairSharing(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


class LocalQueueV1Beta2SpecFairSharingWeight(
    metaclass=jsii.JSIIMeta,
    jsii_type="iox-k8skueue.LocalQueueV1Beta2SpecFairSharingWeight",
):
    '''weight gives a comparative advantage to this ClusterQueue or Cohort when competing for unused resources in the Cohort.

    The share is based on the dominant resource usage
    above nominal quotas for each resource, divided by the
    weight.  Admission prioritizes scheduling workloads from
    ClusterQueues and Cohorts with the lowest share and
    preempting workloads from the ClusterQueues and Cohorts
    with the highest share.  A zero weight implies infinite
    share value, meaning that this Node will always be at
    disadvantage against other ClusterQueues and Cohorts.
    When not 0, Weight must be greater than 10^-9.

    :schema: LocalQueueV1Beta2SpecFairSharingWeight
    '''

    @jsii.member(jsii_name="fromNumber")
    @builtins.classmethod
    def from_number(
        cls,
        value: jsii.Number,
    ) -> "LocalQueueV1Beta2SpecFairSharingWeight":
        '''
        :param value: -
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__9fe0a7a156585b0702e415bed653dc90ae5423a9e5d84c21a9b061605fd2fc45)
            check_type(argname="argument value", value=value, expected_type=type_hints["value"])
        return typing.cast("LocalQueueV1Beta2SpecFairSharingWeight", jsii.sinvoke(cls, "fromNumber", [value]))

    @jsii.member(jsii_name="fromString")
    @builtins.classmethod
    def from_string(
        cls,
        value: builtins.str,
    ) -> "LocalQueueV1Beta2SpecFairSharingWeight":
        '''
        :param value: -
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__50c3355ce445a60ffe96ec6b81f3c5a66ed872940d771c1392ad08c29d31872b)
            check_type(argname="argument value", value=value, expected_type=type_hints["value"])
        return typing.cast("LocalQueueV1Beta2SpecFairSharingWeight", jsii.sinvoke(cls, "fromString", [value]))

    @builtins.property
    @jsii.member(jsii_name="value")
    def value(self) -> typing.Union[builtins.str, jsii.Number]:
        return typing.cast(typing.Union[builtins.str, jsii.Number], jsii.get(self, "value"))


@jsii.enum(jsii_type="iox-k8skueue.LocalQueueV1Beta2SpecStopPolicy")
class LocalQueueV1Beta2SpecStopPolicy(enum.Enum):
    '''stopPolicy - if set to a value different from None, the LocalQueue is considered Inactive, no new reservation being made.

    Depending on its value, its associated workloads will:

    - None - Workloads are admitted
    - HoldAndDrain - Admitted workloads are evicted and Reserving workloads will cancel the reservation.
    - Hold - Admitted workloads will run to completion and Reserving workloads will cancel the reservation.

    :schema: LocalQueueV1Beta2SpecStopPolicy
    '''

    NONE = "NONE"
    '''None.'''
    HOLD = "HOLD"
    '''Hold.'''
    HOLD_AND_DRAIN = "HOLD_AND_DRAIN"
    '''HoldAndDrain.'''


__all__ = [
    "LocalQueue",
    "LocalQueueProps",
    "LocalQueueSpec",
    "LocalQueueSpecFairSharing",
    "LocalQueueSpecFairSharingWeight",
    "LocalQueueSpecStopPolicy",
    "LocalQueueV1Beta2",
    "LocalQueueV1Beta2Props",
    "LocalQueueV1Beta2Spec",
    "LocalQueueV1Beta2SpecFairSharing",
    "LocalQueueV1Beta2SpecFairSharingWeight",
    "LocalQueueV1Beta2SpecStopPolicy",
]

publication.publish()

def _typecheckingstub__0923ce3af15908b2a4a35327ca0f02a8cc64b2f7ed48b77ef35ee444ced5b2b3(
    scope: _constructs_77d1e7e8.Construct,
    id: builtins.str,
    *,
    metadata: typing.Optional[typing.Union[_cdk8s_d3d9af27.ApiObjectMetadata, typing.Dict[builtins.str, typing.Any]]] = None,
    spec: typing.Optional[typing.Union[LocalQueueSpec, typing.Dict[builtins.str, typing.Any]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__5fdcdb0ce070970d038c3961f3dffb6ef8c152152320380eff9c87bb006ec40e(
    *,
    metadata: typing.Optional[typing.Union[_cdk8s_d3d9af27.ApiObjectMetadata, typing.Dict[builtins.str, typing.Any]]] = None,
    spec: typing.Optional[typing.Union[LocalQueueSpec, typing.Dict[builtins.str, typing.Any]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__934f01d1643edf3eaa51b4838e701da14397c6a0d4ca27f92860481415c2837a(
    *,
    cluster_queue: typing.Optional[builtins.str] = None,
    fair_sharing: typing.Optional[typing.Union[LocalQueueSpecFairSharing, typing.Dict[builtins.str, typing.Any]]] = None,
    stop_policy: typing.Optional[LocalQueueSpecStopPolicy] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__c1694b9a7a75dde53eb659f275253ad29e263a40e8b4c3d5e6a17cdd3af273db(
    *,
    weight: typing.Optional[LocalQueueSpecFairSharingWeight] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__9bac0db158ec3e7384cc2f345b1dd46e23cb2f58ebbfb275dafa6535cb6a6182(
    value: jsii.Number,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__674ad5e9425746444da8b7f00f58afed6d8d0df521e716be7011c1e8196b5498(
    value: builtins.str,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__bd930ff92566b8977c690637d05733a09428a78db17a54f0e478059526ee274f(
    scope: _constructs_77d1e7e8.Construct,
    id: builtins.str,
    *,
    metadata: typing.Optional[typing.Union[_cdk8s_d3d9af27.ApiObjectMetadata, typing.Dict[builtins.str, typing.Any]]] = None,
    spec: typing.Optional[typing.Union[LocalQueueV1Beta2Spec, typing.Dict[builtins.str, typing.Any]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__6529ea365a3995da09b194f57c7ef32a3e2db74c598829d28c083b7f4c6095cc(
    *,
    metadata: typing.Optional[typing.Union[_cdk8s_d3d9af27.ApiObjectMetadata, typing.Dict[builtins.str, typing.Any]]] = None,
    spec: typing.Optional[typing.Union[LocalQueueV1Beta2Spec, typing.Dict[builtins.str, typing.Any]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__9e3c68f96d2db7f9e44eee4fa0f7b9208a387f4ae25c4c9527dac5b68ba8d663(
    *,
    cluster_queue: typing.Optional[builtins.str] = None,
    fair_sharing: typing.Optional[typing.Union[LocalQueueV1Beta2SpecFairSharing, typing.Dict[builtins.str, typing.Any]]] = None,
    stop_policy: typing.Optional[LocalQueueV1Beta2SpecStopPolicy] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__3a320ac3236f3db69bc1985cb54bebefded56f5b8333b9ba72a01afd9f835178(
    *,
    weight: typing.Optional[LocalQueueV1Beta2SpecFairSharingWeight] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__9fe0a7a156585b0702e415bed653dc90ae5423a9e5d84c21a9b061605fd2fc45(
    value: jsii.Number,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__50c3355ce445a60ffe96ec6b81f3c5a66ed872940d771c1392ad08c29d31872b(
    value: builtins.str,
) -> None:
    """Type checking stubs"""
    pass
