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


class IpPool(
    _cdk8s_d3d9af27.ApiObject,
    metaclass=jsii.JSIIMeta,
    jsii_type="comnvidianv-ipam.IpPool",
):
    '''IPPool contains configuration for IPAM controller.

    :schema: IPPool
    '''

    def __init__(
        self,
        scope: "_constructs_77d1e7e8.Construct",
        id: builtins.str,
        *,
        spec: typing.Union["IpPoolSpec", typing.Dict[builtins.str, typing.Any]],
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> None:
        '''Defines a "IPPool" API object.

        :param scope: the scope in which to define this object.
        :param id: a scope-local name for the object.
        :param spec: IPPoolSpec contains configuration for IP pool.
        :param metadata: 
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__8c4d3bb45348dd476cda526c442ed3699dc694da02408bc59112a0f1bd14ca99)
            check_type(argname="argument scope", value=scope, expected_type=type_hints["scope"])
            check_type(argname="argument id", value=id, expected_type=type_hints["id"])
        props = IpPoolProps(spec=spec, metadata=metadata)

        jsii.create(self.__class__, self, [scope, id, props])

    @jsii.member(jsii_name="manifest")
    @builtins.classmethod
    def manifest(
        cls,
        *,
        spec: typing.Union["IpPoolSpec", typing.Dict[builtins.str, typing.Any]],
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> typing.Any:
        '''Renders a Kubernetes manifest for "IPPool".

        This can be used to inline resource manifests inside other objects (e.g. as templates).

        :param spec: IPPoolSpec contains configuration for IP pool.
        :param metadata: 
        '''
        props = IpPoolProps(spec=spec, metadata=metadata)

        return typing.cast(typing.Any, jsii.sinvoke(cls, "manifest", [props]))

    @jsii.member(jsii_name="toJson")
    def to_json(self) -> typing.Any:
        '''Renders the object to Kubernetes JSON.'''
        return typing.cast(typing.Any, jsii.invoke(self, "toJson", []))

    @jsii.python.classproperty
    @jsii.member(jsii_name="GVK")
    def GVK(cls) -> "_cdk8s_d3d9af27.GroupVersionKind":
        '''Returns the apiVersion and kind for "IPPool".'''
        return typing.cast("_cdk8s_d3d9af27.GroupVersionKind", jsii.sget(cls, "GVK"))


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolProps",
    jsii_struct_bases=[],
    name_mapping={"spec": "spec", "metadata": "metadata"},
)
class IpPoolProps:
    def __init__(
        self,
        *,
        spec: typing.Union["IpPoolSpec", typing.Dict[builtins.str, typing.Any]],
        metadata: typing.Optional[typing.Union["_cdk8s_d3d9af27.ApiObjectMetadata", typing.Dict[builtins.str, typing.Any]]] = None,
    ) -> None:
        '''IPPool contains configuration for IPAM controller.

        :param spec: IPPoolSpec contains configuration for IP pool.
        :param metadata: 

        :schema: IPPool
        '''
        if isinstance(spec, dict):
            spec = IpPoolSpec(**spec)
        if isinstance(metadata, dict):
            metadata = _cdk8s_d3d9af27.ApiObjectMetadata(**metadata)
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__a807d0208fa46bf9eb32ea39a1d5c41ad7bde22c1533394f9c7de62052978ec4)
            check_type(argname="argument spec", value=spec, expected_type=type_hints["spec"])
            check_type(argname="argument metadata", value=metadata, expected_type=type_hints["metadata"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "spec": spec,
        }
        if metadata is not None:
            self._values["metadata"] = metadata

    @builtins.property
    def spec(self) -> "IpPoolSpec":
        '''IPPoolSpec contains configuration for IP pool.

        :schema: IPPool#spec
        '''
        result = self._values.get("spec")
        assert result is not None, "Required property 'spec' is missing"
        return typing.cast("IpPoolSpec", result)

    @builtins.property
    def metadata(self) -> typing.Optional["_cdk8s_d3d9af27.ApiObjectMetadata"]:
        '''
        :schema: IPPool#metadata
        '''
        result = self._values.get("metadata")
        return typing.cast(typing.Optional["_cdk8s_d3d9af27.ApiObjectMetadata"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolProps(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpec",
    jsii_struct_bases=[],
    name_mapping={
        "per_node_block_size": "perNodeBlockSize",
        "subnet": "subnet",
        "default_gateway": "defaultGateway",
        "exclusions": "exclusions",
        "gateway": "gateway",
        "node_selector": "nodeSelector",
        "per_node_exclusions": "perNodeExclusions",
        "routes": "routes",
    },
)
class IpPoolSpec:
    def __init__(
        self,
        *,
        per_node_block_size: jsii.Number,
        subnet: builtins.str,
        default_gateway: typing.Optional[builtins.bool] = None,
        exclusions: typing.Optional[typing.Sequence[typing.Union["IpPoolSpecExclusions", typing.Dict[builtins.str, typing.Any]]]] = None,
        gateway: typing.Optional[builtins.str] = None,
        node_selector: typing.Optional[typing.Union["IpPoolSpecNodeSelector", typing.Dict[builtins.str, typing.Any]]] = None,
        per_node_exclusions: typing.Optional[typing.Sequence[typing.Union["IpPoolSpecPerNodeExclusions", typing.Dict[builtins.str, typing.Any]]]] = None,
        routes: typing.Optional[typing.Sequence[typing.Union["IpPoolSpecRoutes", typing.Dict[builtins.str, typing.Any]]]] = None,
    ) -> None:
        '''IPPoolSpec contains configuration for IP pool.

        :param per_node_block_size: amount of IPs to allocate for each node, must be less than amount of available IPs in the subnet.
        :param subnet: subnet of the pool.
        :param default_gateway: if true, add gateway as default gateway in the routes list.
        :param exclusions: contains reserved IP addresses that should not be allocated by nv-ipam.
        :param gateway: gateway for the pool.
        :param node_selector: selector for nodes, if empty match all nodes.
        :param per_node_exclusions: contains reserved indexes of IPs that should not be allocated by nv-ipam.
        :param routes: static routes list using the gateway specified in the spec.

        :schema: IpPoolSpec
        '''
        if isinstance(node_selector, dict):
            node_selector = IpPoolSpecNodeSelector(**node_selector)
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__55c596e769679c331407875a02155109027019da05f1037184db42808c394a6a)
            check_type(argname="argument per_node_block_size", value=per_node_block_size, expected_type=type_hints["per_node_block_size"])
            check_type(argname="argument subnet", value=subnet, expected_type=type_hints["subnet"])
            check_type(argname="argument default_gateway", value=default_gateway, expected_type=type_hints["default_gateway"])
            check_type(argname="argument exclusions", value=exclusions, expected_type=type_hints["exclusions"])
            check_type(argname="argument gateway", value=gateway, expected_type=type_hints["gateway"])
            check_type(argname="argument node_selector", value=node_selector, expected_type=type_hints["node_selector"])
            check_type(argname="argument per_node_exclusions", value=per_node_exclusions, expected_type=type_hints["per_node_exclusions"])
            check_type(argname="argument routes", value=routes, expected_type=type_hints["routes"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "per_node_block_size": per_node_block_size,
            "subnet": subnet,
        }
        if default_gateway is not None:
            self._values["default_gateway"] = default_gateway
        if exclusions is not None:
            self._values["exclusions"] = exclusions
        if gateway is not None:
            self._values["gateway"] = gateway
        if node_selector is not None:
            self._values["node_selector"] = node_selector
        if per_node_exclusions is not None:
            self._values["per_node_exclusions"] = per_node_exclusions
        if routes is not None:
            self._values["routes"] = routes

    @builtins.property
    def per_node_block_size(self) -> jsii.Number:
        '''amount of IPs to allocate for each node, must be less than amount of available IPs in the subnet.

        :schema: IpPoolSpec#perNodeBlockSize
        '''
        result = self._values.get("per_node_block_size")
        assert result is not None, "Required property 'per_node_block_size' is missing"
        return typing.cast(jsii.Number, result)

    @builtins.property
    def subnet(self) -> builtins.str:
        '''subnet of the pool.

        :schema: IpPoolSpec#subnet
        '''
        result = self._values.get("subnet")
        assert result is not None, "Required property 'subnet' is missing"
        return typing.cast(builtins.str, result)

    @builtins.property
    def default_gateway(self) -> typing.Optional[builtins.bool]:
        '''if true, add gateway as default gateway in the routes list.

        :schema: IpPoolSpec#defaultGateway
        '''
        result = self._values.get("default_gateway")
        return typing.cast(typing.Optional[builtins.bool], result)

    @builtins.property
    def exclusions(self) -> typing.Optional[typing.List["IpPoolSpecExclusions"]]:
        '''contains reserved IP addresses that should not be allocated by nv-ipam.

        :schema: IpPoolSpec#exclusions
        '''
        result = self._values.get("exclusions")
        return typing.cast(typing.Optional[typing.List["IpPoolSpecExclusions"]], result)

    @builtins.property
    def gateway(self) -> typing.Optional[builtins.str]:
        '''gateway for the pool.

        :schema: IpPoolSpec#gateway
        '''
        result = self._values.get("gateway")
        return typing.cast(typing.Optional[builtins.str], result)

    @builtins.property
    def node_selector(self) -> typing.Optional["IpPoolSpecNodeSelector"]:
        '''selector for nodes, if empty match all nodes.

        :schema: IpPoolSpec#nodeSelector
        '''
        result = self._values.get("node_selector")
        return typing.cast(typing.Optional["IpPoolSpecNodeSelector"], result)

    @builtins.property
    def per_node_exclusions(
        self,
    ) -> typing.Optional[typing.List["IpPoolSpecPerNodeExclusions"]]:
        '''contains reserved indexes of IPs that should not be allocated by nv-ipam.

        :schema: IpPoolSpec#perNodeExclusions
        '''
        result = self._values.get("per_node_exclusions")
        return typing.cast(typing.Optional[typing.List["IpPoolSpecPerNodeExclusions"]], result)

    @builtins.property
    def routes(self) -> typing.Optional[typing.List["IpPoolSpecRoutes"]]:
        '''static routes list using the gateway specified in the spec.

        :schema: IpPoolSpec#routes
        '''
        result = self._values.get("routes")
        return typing.cast(typing.Optional[typing.List["IpPoolSpecRoutes"]], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpec(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecExclusions",
    jsii_struct_bases=[],
    name_mapping={"end_ip": "endIp", "start_ip": "startIp"},
)
class IpPoolSpecExclusions:
    def __init__(self, *, end_ip: builtins.str, start_ip: builtins.str) -> None:
        '''ExcludeRange contains range of IP addresses to exclude from allocation startIP and endIP are part of the ExcludeRange.

        :param end_ip: 
        :param start_ip: 

        :schema: IpPoolSpecExclusions
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__67f8e2f034113bf9f5aeae8cbb50ba7f4969057eaf17a055e6e5edc7fa0e72b4)
            check_type(argname="argument end_ip", value=end_ip, expected_type=type_hints["end_ip"])
            check_type(argname="argument start_ip", value=start_ip, expected_type=type_hints["start_ip"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "end_ip": end_ip,
            "start_ip": start_ip,
        }

    @builtins.property
    def end_ip(self) -> builtins.str:
        '''
        :schema: IpPoolSpecExclusions#endIP
        '''
        result = self._values.get("end_ip")
        assert result is not None, "Required property 'end_ip' is missing"
        return typing.cast(builtins.str, result)

    @builtins.property
    def start_ip(self) -> builtins.str:
        '''
        :schema: IpPoolSpecExclusions#startIP
        '''
        result = self._values.get("start_ip")
        assert result is not None, "Required property 'start_ip' is missing"
        return typing.cast(builtins.str, result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecExclusions(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecNodeSelector",
    jsii_struct_bases=[],
    name_mapping={"node_selector_terms": "nodeSelectorTerms"},
)
class IpPoolSpecNodeSelector:
    def __init__(
        self,
        *,
        node_selector_terms: typing.Sequence[typing.Union["IpPoolSpecNodeSelectorNodeSelectorTerms", typing.Dict[builtins.str, typing.Any]]],
    ) -> None:
        '''selector for nodes, if empty match all nodes.

        :param node_selector_terms: Required. A list of node selector terms. The terms are ORed.

        :schema: IpPoolSpecNodeSelector
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__cfae4718908e9c6c9232d2e0aceda5dde4079fd0e9b1a412c775a86c22facbcf)
            check_type(argname="argument node_selector_terms", value=node_selector_terms, expected_type=type_hints["node_selector_terms"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "node_selector_terms": node_selector_terms,
        }

    @builtins.property
    def node_selector_terms(
        self,
    ) -> typing.List["IpPoolSpecNodeSelectorNodeSelectorTerms"]:
        '''Required.

        A list of node selector terms. The terms are ORed.

        :schema: IpPoolSpecNodeSelector#nodeSelectorTerms
        '''
        result = self._values.get("node_selector_terms")
        assert result is not None, "Required property 'node_selector_terms' is missing"
        return typing.cast(typing.List["IpPoolSpecNodeSelectorNodeSelectorTerms"], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecNodeSelector(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecNodeSelectorNodeSelectorTerms",
    jsii_struct_bases=[],
    name_mapping={
        "match_expressions": "matchExpressions",
        "match_fields": "matchFields",
    },
)
class IpPoolSpecNodeSelectorNodeSelectorTerms:
    def __init__(
        self,
        *,
        match_expressions: typing.Optional[typing.Sequence[typing.Union["IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions", typing.Dict[builtins.str, typing.Any]]]] = None,
        match_fields: typing.Optional[typing.Sequence[typing.Union["IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields", typing.Dict[builtins.str, typing.Any]]]] = None,
    ) -> None:
        '''A null or empty node selector term matches no objects.

        The requirements of
        them are ANDed.
        The TopologySelectorTerm type implements a subset of the NodeSelectorTerm.

        :param match_expressions: A list of node selector requirements by node's labels.
        :param match_fields: A list of node selector requirements by node's fields.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTerms
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__f119659489eceea25acbf28f189b84caf4e54d28be1ed7b70b35552f1e1763d7)
            check_type(argname="argument match_expressions", value=match_expressions, expected_type=type_hints["match_expressions"])
            check_type(argname="argument match_fields", value=match_fields, expected_type=type_hints["match_fields"])
        self._values: typing.Dict[builtins.str, typing.Any] = {}
        if match_expressions is not None:
            self._values["match_expressions"] = match_expressions
        if match_fields is not None:
            self._values["match_fields"] = match_fields

    @builtins.property
    def match_expressions(
        self,
    ) -> typing.Optional[typing.List["IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions"]]:
        '''A list of node selector requirements by node's labels.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTerms#matchExpressions
        '''
        result = self._values.get("match_expressions")
        return typing.cast(typing.Optional[typing.List["IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions"]], result)

    @builtins.property
    def match_fields(
        self,
    ) -> typing.Optional[typing.List["IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields"]]:
        '''A list of node selector requirements by node's fields.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTerms#matchFields
        '''
        result = self._values.get("match_fields")
        return typing.cast(typing.Optional[typing.List["IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields"]], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecNodeSelectorNodeSelectorTerms(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions",
    jsii_struct_bases=[],
    name_mapping={"key": "key", "operator": "operator", "values": "values"},
)
class IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions:
    def __init__(
        self,
        *,
        key: builtins.str,
        operator: builtins.str,
        values: typing.Optional[typing.Sequence[builtins.str]] = None,
    ) -> None:
        '''A node selector requirement is a selector that contains values, a key, and an operator that relates the key and values.

        :param key: The label key that the selector applies to.
        :param operator: Represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists, DoesNotExist. Gt, and Lt.
        :param values: An array of string values. If the operator is In or NotIn, the values array must be non-empty. If the operator is Exists or DoesNotExist, the values array must be empty. If the operator is Gt or Lt, the values array must have a single element, which will be interpreted as an integer. This array is replaced during a strategic merge patch.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__29e25fa775d208eda17c2deab50d0f3b2e81518c8e28dba55b9032910fc490ec)
            check_type(argname="argument key", value=key, expected_type=type_hints["key"])
            check_type(argname="argument operator", value=operator, expected_type=type_hints["operator"])
            check_type(argname="argument values", value=values, expected_type=type_hints["values"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "key": key,
            "operator": operator,
        }
        if values is not None:
            self._values["values"] = values

    @builtins.property
    def key(self) -> builtins.str:
        '''The label key that the selector applies to.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions#key
        '''
        result = self._values.get("key")
        assert result is not None, "Required property 'key' is missing"
        return typing.cast(builtins.str, result)

    @builtins.property
    def operator(self) -> builtins.str:
        '''Represents a key's relationship to a set of values.

        Valid operators are In, NotIn, Exists, DoesNotExist. Gt, and Lt.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions#operator
        '''
        result = self._values.get("operator")
        assert result is not None, "Required property 'operator' is missing"
        return typing.cast(builtins.str, result)

    @builtins.property
    def values(self) -> typing.Optional[typing.List[builtins.str]]:
        '''An array of string values.

        If the operator is In or NotIn,
        the values array must be non-empty. If the operator is Exists or DoesNotExist,
        the values array must be empty. If the operator is Gt or Lt, the values
        array must have a single element, which will be interpreted as an integer.
        This array is replaced during a strategic merge patch.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions#values
        '''
        result = self._values.get("values")
        return typing.cast(typing.Optional[typing.List[builtins.str]], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields",
    jsii_struct_bases=[],
    name_mapping={"key": "key", "operator": "operator", "values": "values"},
)
class IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields:
    def __init__(
        self,
        *,
        key: builtins.str,
        operator: builtins.str,
        values: typing.Optional[typing.Sequence[builtins.str]] = None,
    ) -> None:
        '''A node selector requirement is a selector that contains values, a key, and an operator that relates the key and values.

        :param key: The label key that the selector applies to.
        :param operator: Represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists, DoesNotExist. Gt, and Lt.
        :param values: An array of string values. If the operator is In or NotIn, the values array must be non-empty. If the operator is Exists or DoesNotExist, the values array must be empty. If the operator is Gt or Lt, the values array must have a single element, which will be interpreted as an integer. This array is replaced during a strategic merge patch.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__fde30e4df2613652dfea2739d9bb38aa934edd61b6ef8f5ad0e1cddad25eb1af)
            check_type(argname="argument key", value=key, expected_type=type_hints["key"])
            check_type(argname="argument operator", value=operator, expected_type=type_hints["operator"])
            check_type(argname="argument values", value=values, expected_type=type_hints["values"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "key": key,
            "operator": operator,
        }
        if values is not None:
            self._values["values"] = values

    @builtins.property
    def key(self) -> builtins.str:
        '''The label key that the selector applies to.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields#key
        '''
        result = self._values.get("key")
        assert result is not None, "Required property 'key' is missing"
        return typing.cast(builtins.str, result)

    @builtins.property
    def operator(self) -> builtins.str:
        '''Represents a key's relationship to a set of values.

        Valid operators are In, NotIn, Exists, DoesNotExist. Gt, and Lt.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields#operator
        '''
        result = self._values.get("operator")
        assert result is not None, "Required property 'operator' is missing"
        return typing.cast(builtins.str, result)

    @builtins.property
    def values(self) -> typing.Optional[typing.List[builtins.str]]:
        '''An array of string values.

        If the operator is In or NotIn,
        the values array must be non-empty. If the operator is Exists or DoesNotExist,
        the values array must be empty. If the operator is Gt or Lt, the values
        array must have a single element, which will be interpreted as an integer.
        This array is replaced during a strategic merge patch.

        :schema: IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields#values
        '''
        result = self._values.get("values")
        return typing.cast(typing.Optional[typing.List[builtins.str]], result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecPerNodeExclusions",
    jsii_struct_bases=[],
    name_mapping={"end_index": "endIndex", "start_index": "startIndex"},
)
class IpPoolSpecPerNodeExclusions:
    def __init__(self, *, end_index: jsii.Number, start_index: jsii.Number) -> None:
        '''ExcludeIndexRange contains range of indexes of IPs to exclude from allocation startIndex and endIndex are part of the ExcludeIndexRange.

        :param end_index: 
        :param start_index: 

        :schema: IpPoolSpecPerNodeExclusions
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__c879a38d277c096e72da66c1264f061dbe8dd123dcc39a58ef92b5a44e014c69)
            check_type(argname="argument end_index", value=end_index, expected_type=type_hints["end_index"])
            check_type(argname="argument start_index", value=start_index, expected_type=type_hints["start_index"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "end_index": end_index,
            "start_index": start_index,
        }

    @builtins.property
    def end_index(self) -> jsii.Number:
        '''
        :schema: IpPoolSpecPerNodeExclusions#endIndex
        '''
        result = self._values.get("end_index")
        assert result is not None, "Required property 'end_index' is missing"
        return typing.cast(jsii.Number, result)

    @builtins.property
    def start_index(self) -> jsii.Number:
        '''
        :schema: IpPoolSpecPerNodeExclusions#startIndex
        '''
        result = self._values.get("start_index")
        assert result is not None, "Required property 'start_index' is missing"
        return typing.cast(jsii.Number, result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecPerNodeExclusions(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


@jsii.data_type(
    jsii_type="comnvidianv-ipam.IpPoolSpecRoutes",
    jsii_struct_bases=[],
    name_mapping={"dst": "dst"},
)
class IpPoolSpecRoutes:
    def __init__(self, *, dst: builtins.str) -> None:
        '''Route contains static route parameters.

        :param dst: The destination of the route, in CIDR notation.

        :schema: IpPoolSpecRoutes
        '''
        if __debug__:
            type_hints = cached_type_hints(_typecheckingstub__e4607dab8166583fc34e8332bd318539259d4c5fe448f55c2ce53e690659b689)
            check_type(argname="argument dst", value=dst, expected_type=type_hints["dst"])
        self._values: typing.Dict[builtins.str, typing.Any] = {
            "dst": dst,
        }

    @builtins.property
    def dst(self) -> builtins.str:
        '''The destination of the route, in CIDR notation.

        :schema: IpPoolSpecRoutes#dst
        '''
        result = self._values.get("dst")
        assert result is not None, "Required property 'dst' is missing"
        return typing.cast(builtins.str, result)

    def __eq__(self, rhs: typing.Any) -> builtins.bool:
        return isinstance(rhs, self.__class__) and rhs._values == self._values

    def __ne__(self, rhs: typing.Any) -> builtins.bool:
        return not (rhs == self)

    def __repr__(self) -> str:
        return "IpPoolSpecRoutes(%s)" % ", ".join(
            k + "=" + repr(v) for k, v in self._values.items()
        )


__all__ = [
    "IpPool",
    "IpPoolProps",
    "IpPoolSpec",
    "IpPoolSpecExclusions",
    "IpPoolSpecNodeSelector",
    "IpPoolSpecNodeSelectorNodeSelectorTerms",
    "IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions",
    "IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields",
    "IpPoolSpecPerNodeExclusions",
    "IpPoolSpecRoutes",
]

publication.publish()

def _typecheckingstub__8c4d3bb45348dd476cda526c442ed3699dc694da02408bc59112a0f1bd14ca99(
    scope: _constructs_77d1e7e8.Construct,
    id: builtins.str,
    *,
    spec: typing.Union[IpPoolSpec, typing.Dict[builtins.str, typing.Any]],
    metadata: typing.Optional[typing.Union[_cdk8s_d3d9af27.ApiObjectMetadata, typing.Dict[builtins.str, typing.Any]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__a807d0208fa46bf9eb32ea39a1d5c41ad7bde22c1533394f9c7de62052978ec4(
    *,
    spec: typing.Union[IpPoolSpec, typing.Dict[builtins.str, typing.Any]],
    metadata: typing.Optional[typing.Union[_cdk8s_d3d9af27.ApiObjectMetadata, typing.Dict[builtins.str, typing.Any]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__55c596e769679c331407875a02155109027019da05f1037184db42808c394a6a(
    *,
    per_node_block_size: jsii.Number,
    subnet: builtins.str,
    default_gateway: typing.Optional[builtins.bool] = None,
    exclusions: typing.Optional[typing.Sequence[typing.Union[IpPoolSpecExclusions, typing.Dict[builtins.str, typing.Any]]]] = None,
    gateway: typing.Optional[builtins.str] = None,
    node_selector: typing.Optional[typing.Union[IpPoolSpecNodeSelector, typing.Dict[builtins.str, typing.Any]]] = None,
    per_node_exclusions: typing.Optional[typing.Sequence[typing.Union[IpPoolSpecPerNodeExclusions, typing.Dict[builtins.str, typing.Any]]]] = None,
    routes: typing.Optional[typing.Sequence[typing.Union[IpPoolSpecRoutes, typing.Dict[builtins.str, typing.Any]]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__67f8e2f034113bf9f5aeae8cbb50ba7f4969057eaf17a055e6e5edc7fa0e72b4(
    *,
    end_ip: builtins.str,
    start_ip: builtins.str,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__cfae4718908e9c6c9232d2e0aceda5dde4079fd0e9b1a412c775a86c22facbcf(
    *,
    node_selector_terms: typing.Sequence[typing.Union[IpPoolSpecNodeSelectorNodeSelectorTerms, typing.Dict[builtins.str, typing.Any]]],
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__f119659489eceea25acbf28f189b84caf4e54d28be1ed7b70b35552f1e1763d7(
    *,
    match_expressions: typing.Optional[typing.Sequence[typing.Union[IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions, typing.Dict[builtins.str, typing.Any]]]] = None,
    match_fields: typing.Optional[typing.Sequence[typing.Union[IpPoolSpecNodeSelectorNodeSelectorTermsMatchFields, typing.Dict[builtins.str, typing.Any]]]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__29e25fa775d208eda17c2deab50d0f3b2e81518c8e28dba55b9032910fc490ec(
    *,
    key: builtins.str,
    operator: builtins.str,
    values: typing.Optional[typing.Sequence[builtins.str]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__fde30e4df2613652dfea2739d9bb38aa934edd61b6ef8f5ad0e1cddad25eb1af(
    *,
    key: builtins.str,
    operator: builtins.str,
    values: typing.Optional[typing.Sequence[builtins.str]] = None,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__c879a38d277c096e72da66c1264f061dbe8dd123dcc39a58ef92b5a44e014c69(
    *,
    end_index: jsii.Number,
    start_index: jsii.Number,
) -> None:
    """Type checking stubs"""
    pass

def _typecheckingstub__e4607dab8166583fc34e8332bd318539259d4c5fe448f55c2ce53e690659b689(
    *,
    dst: builtins.str,
) -> None:
    """Type checking stubs"""
    pass
